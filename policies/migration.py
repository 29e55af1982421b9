"""`migration`: locality, and live migration when the checkpoint's best server is busy.

Take the fastest tier that holds the checkpoint anywhere (DRAM, then SSD). If a server
holding it there can start the model now, start on the least occupied one (as `locality`).
If none can, make room on one of them by migrating running instances away: on each
holder, the set of instances that frees enough GPUs at the smallest total cost of a
first migration round (`a * tokens + b`: few tokens, cheap to move), each to its best
destination by locality; the holder whose set is cheapest wins. If no holder can be
freed, fall back to the next tier, and finally to `locality`.
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
from policies.displacement import Ranked, cheapest_moves, first_round_cost, start_or_make_room


@register("migration")
class Migration(Policy):
    needs = Needs.GPUS  # a start needs a candidate; a migration, a holder and free GPUs

    def place(self, request: Request, view: ClusterView) -> Decision:
        model = request.model
        ranks: dict[str, Ranked] = {}  # the migrations' destinations, per model

        def migrate_off(server: int) -> tuple[float, Start] | None:
            cost = first_round_cost(view, server)
            found = cheapest_moves(view, server, model, cost, ranks)
            if found is None:
                return None
            leaving, moves = found
            return sum(cost(r) for r in leaving), Start(server, migrate=moves)

        decision = start_or_make_room(view, model, migrate_off)
        if decision is not None:
            return decision
        server = nearest(view, model)
        return Wait() if server is None else Start(server)
