"""Cancellable timers on a SimPy environment.

SimPy cannot unschedule an event, and a fluid model reschedules its next completion
whenever a rate changes; a cancelled timer therefore stays in the queue and does nothing
when it fires.

A timer is its own SimPy event: `Clock.call_in` schedules it on the environment's queue
as a `Timeout` would be (the same time, priority and insertion order, so the same event
order), without making a `Timeout` beside it. When the environment pops it, it calls the
timer's one callback with the timer.

Cancelled timers can outnumber live ones many times over (a keep-alive cancelled by
the next request stays queued for the whole keep-alive; on 1,024 servers nineteen
queued timers in twenty were dead), and every push and pop pays for the heap's depth.
So, as asyncio's event loop does, once more than half the queue is dead the queue is
rebuilt without them. Its entries keep their keys (time, priority, insertion order),
all distinct, so the live timers fire in the same order as before.
"""

from collections.abc import Callable
from heapq import heapify
from typing import Any

import simpy
from simpy.events import NORMAL

PURGE_AT = 64  # a queue shorter than this is never rebuilt: too cheap to matter


class Timer:
    __slots__ = ("_args", "_clock", "_fn", "callbacks", "cancelled")
    _ok = True  # what SimPy's step reads of an event it processed: a timer never fails

    def __init__(self, clock: "Clock", fn: Callable[..., Any], args: tuple) -> None:
        self._clock = clock
        self._fn = fn
        self._args = args
        self.cancelled = False
        # `_FIRE` while queued (`Clock.call_in`); SimPy sets it to None once processed.
        self.callbacks: tuple | None = None

    def cancel(self) -> None:
        if not self.cancelled:
            self.cancelled = True
            if self.callbacks is not None:  # queued: one more dead entry
                self._clock._queued_timer_cancelled()

    def __call__(self, _event: object = None) -> None:
        clock = self._clock
        if self.cancelled:
            clock.dead -= 1
            return
        clock.fired += 1
        clock.now = clock.last_event_s = clock.env.now
        self._fn(*self._args)
        if clock.after_event is not None:
            clock.after_event(self._fn)


_FIRE = (Timer.__call__,)  # every queued timer's callbacks: SimPy calls each with the event


class Clock:
    """Simulated time, and callbacks at future times. `fired` counts live events, `dead`
    the cancelled timers still queued.

    `now` is a plain attribute, set as each live event fires and when a run ends: the
    model reads it several times an event, and only timers run while SimPy does."""

    def __init__(self) -> None:
        self.env = simpy.Environment()
        self.now = 0.0
        self.fired = 0
        self.dead = 0
        self.last_event_s = 0.0  # when the latest live event fired
        # Called with each event's function after it ran (the invariant checker's hook).
        self.after_event: Callable[[Callable[..., Any]], None] | None = None

    def call_in(self, delay: float, fn: Callable[..., Any], *args: Any) -> Timer:
        if delay < 0:
            raise ValueError(f"negative delay {delay}")
        timer = Timer(self, fn, args)
        timer.callbacks = _FIRE
        self.env.schedule(timer, NORMAL, delay)  # type: ignore[arg-type]
        return timer

    def _queued_timer_cancelled(self) -> None:
        """Count a dead entry; drop the dead ones once they are most of the queue."""
        self.dead += 1
        queue = self.env._queue  # SimPy's heap of (time, priority, order, event)
        if self.dead * 2 > len(queue) >= PURGE_AT:
            queue[:] = [entry for entry in queue if not _dead(entry[3])]
            heapify(queue)
            self.dead = 0

    def run(self, until: float | None = None) -> None:
        """Run every event, or those before simulated time `until`."""
        self.env.run(until)
        self.now = self.env.now


def _dead(event: object) -> bool:
    return type(event) is Timer and event.cancelled
