"""`drop`: no queue. A request that cannot be placed when it arrives is turned away.

A function platform at its memory or concurrency limit answers "too many requests"
rather than holding the call, and FaasCache's simulator counts such an invocation as a
capacity miss and moves on (Fuerst and Sharma, ASPLOS '21; its artifact's
`LambdaScheduler.runActivation`). Under `drop` a request that finds no instance of its
model with room and no server its policy can start one on (after evicting what the
keep-alive policy gives up) ends at once with status `dropped`, as does one a preemption
would put back. The requests served see a cluster no busier than it can take; the
summary counts the others (`dropped`).
"""

from sim.queues.base import QueueDiscipline, register


@register("drop")
class Drop(QueueDiscipline):
    def arrive(self, i: int, model: str) -> None:
        if not self.route(i, model):
            self.turn_away(i)

    def requeue(self, i: int, model: str) -> None:
        self.turn_away(i)

    def drain(self) -> None:
        """Nothing waits: nothing to retry."""
