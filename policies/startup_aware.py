"""`startup-aware`: estimate every option's startup time and take the cheapest.

The ServerlessLLM scheduler's idea (OSDI '24). The options for a request with no warm
instance to join are: start on a server whose DRAM or SSD holds the checkpoint and has
room; make room on such a holder by migrating running instances away (the cheapest set,
as in `migration`); or start on a server without the checkpoint, loading it from the
remote store. `policies.estimator` prices each (link queueing, bytes over the tier's
bandwidth, start-up cost, migration rounds and the destinations' own loads). All holders
are priced; servers without the checkpoint are priced up to `REMOTE_PROBES` of them, in
the cluster's candidate order (best fit first), so a decision costs the same on 16 or
1,024 servers. Ties go to the lower server id. The chosen estimate is recorded.
"""

from policies.base import ClusterView, Decision, Policy, Request, Start, Wait, register
from policies.displacement import cheapest_moves, first_round_cost
from policies.estimator import migration_start_s, start_s


@register("startup-aware")
class StartupAware(Policy):
    REMOTE_PROBES = 8

    def place(self, request: Request, view: ClusterView) -> Decision:
        model = request.model
        options: list[Start] = []
        holders: set[int] = set()
        for tier in ("dram", "ssd"):
            for s in view.holders(model, tier):
                if s not in holders:
                    holders.add(s)
                    options.extend(self._options_on(view, s, model))
        probed = 0
        for s in view.candidates(model):
            if probed == self.REMOTE_PROBES:
                break
            if s not in holders:
                options.append(Start(s, start_s(view, s, model)))
                probed += 1
        if not options:
            return Wait()
        return min(options, key=lambda o: (o.estimate_s, o.server))

    @staticmethod
    def _options_on(view: ClusterView, server: int, model: str) -> list[Start]:
        if view.can_start(server, model):
            return [Start(server, start_s(view, server, model))]
        found = cheapest_moves(view, server, model, first_round_cost(view, server))
        if found is None:
            return []
        leaving, moves = found
        return [Start(server, migration_start_s(view, server, model, leaving, moves), moves)]
