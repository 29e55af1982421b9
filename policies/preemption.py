"""`preemption`: the Shepherd*-style baseline of the ServerlessLLM paper (OSDI '24).

Like `migration`, but room on the checkpoint's best server is made by stopping running
instances outright: their requests go back to the queue and start over, their progress
lost. The instances stopped are those that cover the shortfall losing the fewest tokens
of context. A request that was itself preempted places by plain locality, so
preemptions never cascade.
"""

from policies.base import (
    ClusterView,
    Decision,
    Needs,
    Policy,
    Request,
    Running,
    Start,
    Wait,
    nearest,
    register,
)
from policies.displacement import covering_sets, displaceable, start_or_make_room


def _context_tokens(r: Running) -> float:
    return r.tokens


@register("preemption")
class Preemption(Policy):
    needs = Needs.NOTHING  # it makes room by stopping running instances, GPUs free or not

    def place(self, request: Request, view: ClusterView) -> Decision:
        model = request.model

        def preempt_on(server: int) -> tuple[float, Start] | None:
            running, need = displaceable(view, server, model)
            sets = covering_sets(running, need, _context_tokens)
            if not sets:
                return None
            victims = sets[0]
            lost = sum(r.tokens for r in victims)
            return lost, Start(server, preempt=tuple(r.id for r in victims))

        if not request.preempted:
            decision = start_or_make_room(view, model, preempt_on)
            if decision is not None:
                return decision
        server = nearest(view, model)
        return Wait() if server is None else Start(server)
