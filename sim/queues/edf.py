"""`edf`: earliest TTFT deadline first.

A request's deadline is its arrival plus its model's TTFT SLO (`ttft_slo_s` in the
model's catalog entry). Waiting requests stay in per-model queues as under `fifo` (within
a model, arrival order is deadline order), but the models are offered capacity in the
order of their most urgent waiter. With one SLO for every model this is `fifo`.
"""

from sim.queues.base import register
from sim.queues.fifo import Fifo


@register("edf")
class EarliestDeadlineFirst(Fifo):
    def order(self) -> list[str]:
        arrival, models = self.arrival, self.models
        return sorted(
            self.waiting,
            key=lambda m: (arrival[self.waiting[m][0]] + models[m].ttft_slo_s, self.waiting[m][0]),
        )
