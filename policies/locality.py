"""`locality`: start where the checkpoint sits in the fastest tier (DRAM, then SSD).

Among the servers that can start the model now, take one whose DRAM cache holds the
checkpoint, else one whose SSD holds it, else any (a remote load); within a tier, the
least occupied server (fewest GPUs in use, then lowest id). It waits only when no server
has room: it does not wait for a busy server that holds the checkpoint (that is what the
`migration` and `startup-aware` policies reason about).
"""

from policies.base import (
    ClusterView,
    Decision,
    Needs,
    Policy,
    Request,
    Start,
    Wait,
    nearest,
    register,
)


@register("locality")
class Locality(Policy):
    needs = Needs.CANDIDATE

    def place(self, request: Request, view: ClusterView) -> Decision:
        server = nearest(view, request.model)
        return Wait() if server is None else Start(server)
