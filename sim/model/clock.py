"""Cancellable timers on a SimPy environment.

SimPy cannot unschedule an event, and a fluid model reschedules its next completion
whenever a rate changes; a cancelled timer therefore stays in the queue and does nothing
when it fires.

A timer is its own SimPy event: `Clock.call_in` schedules it on the environment's queue
as a `Timeout` would be (the same time, priority and insertion order, so the same event
order), without making a `Timeout` beside it. When the environment pops it, it calls the
timer's one callback with the timer.
"""

from collections.abc import Callable
from typing import Any

import simpy
from simpy.events import NORMAL


class Timer:
    __slots__ = ("_args", "_clock", "_fn", "callbacks", "cancelled")
    _ok = True  # what SimPy's step reads of an event it processed: a timer never fails

    def __init__(self, clock: "Clock", fn: Callable[..., Any], args: tuple) -> None:
        self._clock = clock
        self._fn = fn
        self._args = args
        self.cancelled = False
        self.callbacks: tuple | None = _FIRE  # SimPy sets it to None once processed

    def cancel(self) -> None:
        self.cancelled = True

    def __call__(self, _event: object = None) -> None:
        if not self.cancelled:
            clock = self._clock
            clock.fired += 1
            clock.now = clock.last_event_s = clock.env.now
            self._fn(*self._args)
            if clock.after_event is not None:
                clock.after_event(self._fn)


_FIRE = (Timer.__call__,)  # every timer's callbacks: SimPy calls each with the event


class Clock:
    """Simulated time, and callbacks at future times. `fired` counts live events.

    `now` is a plain attribute, set as each live event fires and when a run ends: the
    model reads it several times an event, and only timers run while SimPy does."""

    def __init__(self) -> None:
        self.env = simpy.Environment()
        self.now = 0.0
        self.fired = 0
        self.last_event_s = 0.0  # when the latest live event fired
        # Called with each event's function after it ran (the invariant checker's hook).
        self.after_event: Callable[[Callable[..., Any]], None] | None = None

    def call_in(self, delay: float, fn: Callable[..., Any], *args: Any) -> Timer:
        if delay < 0:
            raise ValueError(f"negative delay {delay}")
        timer = Timer(self, fn, args)
        self.env.schedule(timer, NORMAL, delay)  # type: ignore[arg-type]
        return timer

    def run(self, until: float | None = None) -> None:
        """Run every event, or those before simulated time `until`."""
        self.env.run(until)
        self.now = self.env.now
