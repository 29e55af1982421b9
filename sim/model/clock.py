"""Cancellable timers on a SimPy environment.

SimPy cannot unschedule an event, and a fluid model reschedules its next completion
whenever a rate changes; a cancelled timer therefore stays in the queue and does nothing
when it fires.

A timer is its own entry on the environment's queue: `Clock.call_in` schedules it as a
`Timeout` would be (the same time, priority and insertion order, so the same event
order), without making a `Timeout` beside it, and `Clock.run` pops it and calls its
function.

Cancelled timers can outnumber live ones many times over (a keep-alive cancelled by
the next request stays queued for the whole keep-alive; on 1,024 servers nineteen
queued timers in twenty were dead), and every push and pop pays for the heap's depth.
So, as asyncio's event loop does, once more than half the queue is dead the queue is
rebuilt without them. Its entries keep their keys (time, priority, insertion order),
all distinct, so the live timers fire in the same order as before.
"""

from collections.abc import Callable
from heapq import heapify, heappop, heappush
from typing import Any

import simpy
from simpy.events import NORMAL

PURGE_AT = 64  # a queue shorter than this is never rebuilt: too cheap to matter


class Timer:
    """A function to call at a time, on the environment's queue; `Clock.run` fires it."""

    __slots__ = ("_args", "_clock", "_fn", "cancelled", "queued")

    def __init__(self, clock: "Clock", fn: Callable[..., Any], args: tuple) -> None:
        self._clock = clock
        self._fn = fn
        self._args = args
        self.cancelled = False
        self.queued = False  # on the queue, not yet popped

    def cancel(self) -> None:
        if not self.cancelled:
            self.cancelled = True
            if self.queued:  # one more dead entry, counted in place rather than by a call
                clock = self._clock
                clock.dead += 1
                if clock.dead * 2 > len(clock._queue) >= PURGE_AT:
                    clock._purge()


class Clock:
    """Simulated time, and callbacks at future times. `fired` counts live events, `dead`
    the cancelled timers still queued.

    `now` is a plain attribute, set as each live event fires and when a run ends: the
    model reads it several times an event, and only timers are queued. Timers are keyed
    from it; the environment's own time is brought level with it when a run ends, or
    stops on an event that raised."""

    def __init__(self) -> None:
        self.env = simpy.Environment()
        # Its heap and order counter, held here: read for every timer set (the heap is
        # only ever changed in place, so it stays this list).
        self._queue: list = self.env._queue
        self._order = self.env._eid
        self.now = 0.0
        self.fired = 0
        self.dead = 0
        self.last_event_s = 0.0  # when the latest live event fired
        # Called with each event's function after it ran (the invariant checker's hook);
        # read as a run starts.
        self.after_event: Callable[[Callable[..., Any]], None] | None = None
        # The one call `call_next` holds off the queue: (time, order, function, argument).
        self._next: tuple[float, int, Callable[[Any], None], Any] | None = None

    def call_in(self, delay: float, fn: Callable[..., Any], *args: Any) -> Timer:
        if delay < 0:
            raise ValueError(f"negative delay {delay}")
        timer = Timer(self, fn, args)
        timer.queued = True
        # Keyed as SimPy's `schedule` keys a `Timeout`, without the call.
        heappush(self._queue, (self.now + delay, NORMAL, next(self._order), timer))
        return timer

    def call_next(self, delay: float, fn: Callable[[Any], None], arg: Any) -> None:
        """Call `fn(arg)` after `delay`, as `call_in` would (the same place in the event
        order), for a stream of calls of which one at a time is pending: the trace's
        arrivals, each setting the next. It is held beside the queue, not on it, so it
        costs neither a timer nor a push and a pop of the heap; it cannot be cancelled."""
        if delay < 0:
            raise ValueError(f"negative delay {delay}")
        if self._next is not None:
            raise RuntimeError("call_next: a held call is still pending")
        self._next = (self.now + delay, next(self._order), fn, arg)  # as `schedule` keys it

    def _purge(self) -> None:
        """Drop the dead entries (every entry is a timer)."""
        queue = self._queue  # SimPy's heap of (time, priority, order, event)
        queue[:] = [entry for entry in queue if not entry[3].cancelled]  # all timers
        heapify(queue)
        self.dead = 0

    def run(self, until: float | None = None) -> None:
        """Run every event, and end with `now` at the last that was not cancelled; or
        those before simulated time `until` (one due at `until` stays queued, as SimPy's
        own `run(until)` leaves it), and end with `now` there.

        The loop is SimPy's `Environment.step` written out for timers, the only events
        the model queues: the same heap, popped in the same order, each timer's function
        called in place, which spares two Python calls an event."""
        env = self.env
        started = env._now
        if until is not None and until <= started:
            raise ValueError(f"until ({until}) must be greater than the current time")
        queue = self._queue
        after_event = self.after_event  # read once a run
        fired = 0  # live events this run, counted in a local: `fired` is read after runs
        try:
            while True:
                pending = self._next
                # The held call goes first if it comes before the queue's head: by time,
                # then by the order they were set in (every timer has the same priority).
                # Written out, not a function: it is asked before every event.
                if pending is not None and (
                    not queue
                    or pending[0] < queue[0][0]
                    or (pending[0] == queue[0][0] and pending[1] < queue[0][2])
                ):
                    at = pending[0]
                    if until is not None and at >= until:  # uncut, even one at inf fires
                        break
                    self._next = None
                    self.now = at
                    fired += 1
                    pending[2](pending[3])
                    if after_event is not None:
                        after_event(pending[2])
                    continue
                if not queue or (until is not None and queue[0][0] >= until):
                    break
                at, _, _, event = heappop(queue)
                event.queued = False  # a later cancel counts no dead entry
                if event.cancelled:
                    self.dead -= 1
                    continue
                fired += 1
                self.now = at
                event._fn(*event._args)
                if after_event is not None:
                    after_event(event._fn)
        finally:
            if fired:  # `now` moves only as a live event fires
                self.fired += fired
                self.last_event_s = self.now
            env._now = self.now  # level, even where an event raised
        # Cut: the run ends at the cut. Else at its last live event, not at a cancelled
        # timer popped after it: whether one is still queued then depends on when the
        # dead were last purged, which must not show in any result.
        env._now = max(started, self.last_event_s) if until is None else until
        self.now = env._now
