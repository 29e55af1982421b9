"""`locality`: start where the checkpoint sits in the fastest tier (DRAM, then SSD).

Among the servers that can start the model now, take one whose DRAM cache holds the
checkpoint, else one whose SSD holds it, else any (a remote load); within a tier, the
least loaded server (fewest GPUs in use, then lowest id). It waits only when no server
has room: it does not wait for a busy server that holds the checkpoint (that is what the
`migration` and `startup-aware` policies reason about).
"""

from policies.base import (
    ClusterView,
    Decision,
    Policy,
    Request,
    Start,
    Wait,
    least_loaded,
    register,
)


@register("locality")
class Locality(Policy):
    def place(self, request: Request, view: ClusterView) -> Decision:
        model = request.model
        for tier in ("dram", "ssd"):
            ready = (s for s in view.holders(model, tier) if view.can_start(s, model))
            server = least_loaded(ready, view)
            if server is not None:
                return Start(server)
        server = least_loaded(view.candidates(model), view)
        return Wait() if server is None else Start(server)
