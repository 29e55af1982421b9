"""`startup-aware`: estimate every option's startup time and take the cheapest.

The ServerlessLLM scheduler's idea (OSDI '24). The options for a request with no warm
instance to join are: start on a server whose DRAM or SSD holds the checkpoint and has
room; make room on such a holder by migrating running instances away (the cheapest set,
as in `migration`); or start on a server without the checkpoint, loading it from the
remote store. `policies.estimator` prices each (link queueing, bytes over the tier's
bandwidth, start-up cost, migration rounds and the destinations' own loads). Per tier,
up to `HOLDER_PROBES` holders with room are priced, and as many busy holders for a
migration (on a big cluster a popular checkpoint sits in hundreds of DRAM caches, and
pricing them all made decisions grow with the cluster; finding those with room is a
cheap check each), and up to `REMOTE_PROBES` servers without the checkpoint, least
occupied first: the servers whose links are likeliest idle (probed fullest first, a burst
of cold starts on a big cluster sees only the servers its own earlier loads are crossing,
and sends its remote loads to share their links while idle ones abound). It weighs wakes
too: each sleeping engine of the model the view offers (`ClusterView.sleeping`) is an
option priced at its `wake_s` (a swap of idle instances, then the copy from DRAM or the
reload from a tier). Ties go to
a wake, then to the lower server id. The chosen estimate is recorded. With
execute-while-load, a start's estimate is the effective startup (the load hides most of
the request's prefill); a wake hides none (a woken engine prefills once ready), so its
estimate is its whole wake.
"""

from policies.base import (
    ClusterView,
    Decision,
    Needs,
    Policy,
    Request,
    Start,
    Wait,
    Wake,
    register,
)
from policies.displacement import Ranked, cheapest_moves, first_round_cost
from policies.estimator import migration_start_s, start_s
from thaw_kernel.tiers import CACHE_TIERS


@register("startup-aware")
class StartupAware(Policy):
    HOLDER_PROBES = 16  # per tier
    REMOTE_PROBES = 8
    weighs_wakes = True
    # Starts and wakes need a candidate (a sleeping engine is offered only where it can
    # wake now); a migration, a busy holder and the cluster's free GPUs.
    needs = Needs.GPUS

    def place(self, request: Request, view: ClusterView) -> Decision:
        model, tokens = request.model, request.input_tokens
        options: list[Start | Wake] = [
            Wake(s.server, s.instance, s.wake_s) for s in view.sleeping(model)
        ]
        holders: set[int] = set()
        ranks: dict[str, Ranked] = {}  # the migrations' destinations, per model
        for tier in CACHE_TIERS:
            tier_holders = [s for s in view.holders(model, tier) if s not in holders]
            holders.update(tier_holders)
            ready = [s for s in tier_holders if view.can_start(s, model)]
            busy = [s for s in tier_holders if not view.can_start(s, model)]
            for s in ready[: self.HOLDER_PROBES]:
                options.append(Start(s, start_s(view, s, model, tokens=tokens)))
            for s in busy[: self.HOLDER_PROBES]:
                options.extend(self._migration_option(view, s, model, tokens, ranks))
        probed = 0
        for s in view.by_occupancy(model):
            if probed == self.REMOTE_PROBES:
                break
            if s not in holders:
                options.append(Start(s, start_s(view, s, model, tokens=tokens)))
                probed += 1
        if not options:
            return Wait()
        return min(options, key=lambda o: (o.estimate_s, isinstance(o, Start), o.server))

    @staticmethod
    def _migration_option(
        view: ClusterView, server: int, model: str, tokens: int, ranks: dict[str, Ranked]
    ) -> list[Start]:
        found = cheapest_moves(view, server, model, first_round_cost(view, server), ranks)
        if found is None:
            return []
        leaving, moves = found
        estimate = migration_start_s(view, server, model, leaving, moves, tokens)
        return [Start(server, estimate, moves)]
