"""`startup-aware`: estimate every option's startup time and take the cheapest.

The ServerlessLLM scheduler's idea (OSDI '24). The options for a request with no warm
instance to join are: start on a server whose DRAM or SSD holds the checkpoint and has
room; make room on such a holder by migrating running instances away (the cheapest set,
as in `migration`); or start on a server without the checkpoint, loading it from the
remote store. `policies.estimator` prices each (link queueing, bytes over the tier's
bandwidth, start-up cost, migration rounds and the destinations' own loads). Up to
`HOLDER_PROBES` holders per tier are priced (in the index's order: on a big cluster a
popular checkpoint sits in hundreds of DRAM caches, and pricing them all made decisions
grow with the cluster), and up to `REMOTE_PROBES` servers without the checkpoint, in the
cluster's candidate order (best fit first), so a decision costs about the same on 16 or
1,024 servers. Ties go to the lower server id. The chosen estimate is recorded.
"""

from itertools import islice

from policies.base import ClusterView, Decision, Policy, Request, Start, Wait, register
from policies.displacement import cheapest_moves, first_round_cost
from policies.estimator import migration_start_s, start_s


@register("startup-aware")
class StartupAware(Policy):
    HOLDER_PROBES = 16  # per tier
    REMOTE_PROBES = 8

    def place(self, request: Request, view: ClusterView) -> Decision:
        model = request.model
        options: list[Start] = []
        holders: set[int] = set()
        for tier in ("dram", "ssd"):
            for s in islice(view.holders(model, tier), self.HOLDER_PROBES):
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
