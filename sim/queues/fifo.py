"""`fifo`: per-model queues, retried greedily, the model with the oldest waiter first.

A request waits in its model's queue, behind any request of its model already waiting
(those would be placed the same way first). Whenever capacity frees up, the models are
visited in the order of their oldest waiter, and each places requests while they fit; a
model that cannot place its oldest moves on to the next. Greedy: a model needing a whole
server can wait long while smaller models take GPUs as they free (`backfill` reserves).
"""

import bisect
from collections import deque

from sim.queues.base import QueueDiscipline, register


@register("fifo")
class Fifo(QueueDiscipline):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.waiting: dict[str, deque[int]] = {}  # per model, arrival order
        self._draining = False

    def arrive(self, i: int, model: str) -> None:
        if model in self.waiting or not self.route(i, model):
            self.waiting.setdefault(model, deque()).append(i)

    def requeue(self, i: int, model: str) -> None:
        bisect.insort(self.waiting.setdefault(model, deque()), i)  # numbers: arrival order

    def order(self) -> list[str]:
        """The models with waiters, in the order they are offered capacity."""
        return sorted(self.waiting, key=lambda m: self.waiting[m][0])

    def drain(self) -> None:
        if self._draining or not self.waiting:
            return
        self._draining = True
        try:
            self._offer()
        finally:
            self._draining = False

    def _offer(self) -> None:
        """Offer free capacity to the waiters (`drain`, without re-entering it)."""
        self._serve(self.order())

    def _serve(self, models: list[str]) -> None:
        """Place each model's waiters, oldest first, until one must wait."""
        for model in models:
            queue = self.waiting[model]
            while queue and self.route(queue[0], model):
                queue.popleft()
            if not queue:
                del self.waiting[model]
