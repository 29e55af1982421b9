"""`edf`: earliest TTFT deadline first.

A request's deadline is its arrival plus its model's TTFT SLO (`ttft_slo_s` in the
model's catalog entry). Waiting requests stay in per-model queues as under `fifo` (within
a model, arrival order is deadline order), but the models are offered capacity in the
order of their most urgent waiter. With one SLO for every model this is `fifo`.
"""

from sim.queues.base import register
from sim.queues.fifo import Fifo, Key


@register("edf")
class EarliestDeadlineFirst(Fifo):
    def _key(self, model: str) -> Key:
        """By the deadline of its oldest waiter, then arrival."""
        head = self.waiting[model][0]
        return (self.arrival[head] + self.models[model].ttft_slo_s, head)
