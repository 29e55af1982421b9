"""`backfill`: one arrival-ordered queue whose head holds a reservation (EASY backfilling).

As in HPC batch schedulers (Lifka, "The ANL/IBM SP scheduling system", JSSPP '95): when
the oldest waiting request (the head) cannot be placed, it reserves GPUs on one server,
and later requests are placed only where they do not delay it. Here a start has no known
end, so "not delaying it" is made safe by construction:

- on the reserved server, the idle instances of other models and enough busy ones
  (least occupied first) are *fenced*, taking no new requests, so that they drain and
  free their GPUs. The server is the one that can host the head's model where fencing
  leaves the fewest models without an unfenced instance (fencing a model's only
  instance would make its requests wait in turn: two models needing a whole server
  each would take turns evicting each other), then where the fewest requests must
  finish first, then the lowest id;
- those GPUs, and any that free up there meanwhile, accumulate for the head: every other
  request's policy sees the server through `ReservedView`, its reserved GPUs hidden and
  its instances not displaceable;
- when the head is placed (anywhere), the fences come down and the next waiter that
  cannot be placed reserves in turn.

A head needs no reservation when nothing can overtake it: a one-GPU head is offered the
first GPU that frees anywhere, and a head whose model runs already is offered the first
slot its instances free.

Requests of one model still wait behind each other (as under `fifo`), so only the oldest
waiter of each model is offered capacity on a retry.
"""

from collections import Counter
from typing import TYPE_CHECKING

from policies.base import ClusterView
from sim.queues.base import register
from sim.queues.fifo import Fifo
from sim.queues.reserved_view import ReservedView

if TYPE_CHECKING:
    from sim.model.instance import Instance


@register("backfill")
class Backfill(Fifo):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.holder: int | None = None  # the request holding the reservation
        self.reserved: ReservedView | None = None  # None: nothing to hide (see `_reserve`)
        self._fenced: list[Instance] = []
        self.reservations = 0

    def view(self, i: int) -> ClusterView:
        if self.reserved is None or i == self.holder:
            return self.cluster
        return self.reserved

    def arrive(self, i: int, model: str) -> None:
        super().arrive(i, model)
        if self.holder is None and self.waiting:
            head_model = self._head()
            self._reserve(self.waiting[head_model][0], head_model)

    def requeue(self, i: int, model: str) -> None:
        """A preempted request goes back in arrival order; if it is older than the head
        holding the reservation, that head is no longer the oldest: the reservation goes,
        and the next drain reserves for the new head."""
        super().requeue(i, model)
        if self.holder is not None and i < self.holder:
            self._release()

    def _offer(self) -> None:
        self._place_heads()
        if self.waiting:
            self._serve(skip=self._head())  # backfill behind the head, which waits

    def _place_heads(self) -> None:
        """Place the oldest waiter while it fits; the first that does not, reserves."""
        while self.waiting:
            model = self._head()
            queue = self.waiting[model]
            i = queue[0]
            if i != self.holder:
                self._release()  # the reservation was another's: stale
            if not self.route(i, model):
                if self.holder is None:
                    self._reserve(i, model)
                return
            self._release()
            queue.popleft()
            if not queue:
                del self.waiting[model]
            self._touch(model)

    def _release(self) -> None:
        for instance in self._fenced:
            instance.fenced = False
        self._fenced.clear()
        self.holder, self.reserved = None, None

    def _reserve(self, i: int, model: str) -> None:
        """Reserve a server for request `i` (see the module's docstring), fencing what must
        drain there. A head of a model already running holds the queue without hiding
        anything: it is first in line for the next slot its instances free (reserving a
        server too would idle GPUs for a request a slot serves sooner); so does a head
        no server can free enough GPUs for."""
        self.holder = i
        need = self.models[model].gpus
        if need == 1:
            return  # it is offered the first GPU that frees anywhere: none can overtake it
        live = Counter(x.model.name for server in self.cluster.servers for x in server.instances)
        if live[model]:
            return  # it joins its model's instance as soon as that frees a slot
        best: tuple[tuple[int, int, int], list[Instance]] | None = None
        for server in self.cluster.servers:
            if not self.cluster.can_host(server.id, model):
                continue
            fence = _to_fence(server.instances, model, need - server.available_gpus)
            if fence is not None:
                fenced = Counter(x.model.name for x in fence)
                cut_off = sum(live[m] == n for m, n in fenced.items())
                cost = (cut_off, sum(x.occupancy for x in fence), server.id)
                if best is None or cost < best[0]:
                    best = (cost, fence)
        if best is None:
            return
        (_, _, server_id), fence = best
        for instance in fence:
            instance.fenced = True
        self._fenced = fence
        self.reserved = ReservedView(self.cluster, server_id, need)
        self.reservations += 1

    def audit(self) -> str | None:
        problem = super().audit()
        if problem is not None:
            return problem
        if self.holder is not None and not any(
            queue[0] == self.holder for queue in self.waiting.values()
        ):
            return f"request #{self.holder} holds the reservation but waits at no queue's head"
        for instance in self._fenced:
            if self.reserved is None or instance.server != self.reserved.server:
                return f"instance {instance.id} is fenced off the reserved server"
        return None


def _to_fence(
    instances: dict["Instance", None], model: str, shortfall: int
) -> list["Instance"] | None:
    """What must take no new request for `shortfall` more GPUs to free up: the idle
    instances of other models (their GPUs count as available only while nothing rejoins
    them), then the least occupied busy ones until their GPUs cover the shortfall; None if
    those on the server cannot."""
    others = [i for i in instances if i.model.name != model]
    fence = [i for i in others if i.is_idle]
    busy = sorted((i for i in others if not i.is_idle), key=lambda i: (i.occupancy, i.id))
    for instance in busy:
        if shortfall <= 0:
            break
        fence.append(instance)
        shortfall -= instance.model.gpus
    return fence if shortfall <= 0 else None
