"""Cancellable timers on a SimPy environment.

SimPy cannot unschedule an event, and a fluid model reschedules its next completion
whenever a rate changes; a cancelled timer therefore stays in the queue and does nothing
when it fires.
"""

from collections.abc import Callable
from typing import Any

import simpy


class Timer:
    __slots__ = ("_args", "_clock", "_fn", "cancelled")

    def __init__(self, clock: "Clock", fn: Callable[..., Any], args: tuple) -> None:
        self._clock = clock
        self._fn = fn
        self._args = args
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True

    def __call__(self, _event: simpy.Event) -> None:
        if not self.cancelled:
            clock = self._clock
            clock.fired += 1
            clock.last_event_s = clock.env.now
            self._fn(*self._args)
            if clock.after_event is not None:
                clock.after_event(self._fn)


class Clock:
    """Simulated time, and callbacks at future times. `fired` counts live events."""

    def __init__(self) -> None:
        self.env = simpy.Environment()
        self.fired = 0
        self.last_event_s = 0.0  # when the latest live event fired
        # Called with each event's function after it ran (the invariant checker's hook).
        self.after_event: Callable[[Callable[..., Any]], None] | None = None

    @property
    def now(self) -> float:
        return self.env.now

    def call_in(self, delay: float, fn: Callable[..., Any], *args: Any) -> Timer:
        timer = Timer(self, fn, args)
        self.env.timeout(delay).callbacks.append(timer)
        return timer

    def run(self, until: float | None = None) -> None:
        """Run every event, or those before simulated time `until`."""
        self.env.run(until)
