"""Checkpoint loads as fluid flows over one server's shared links.

A load streams from its tier to the GPUs through every link on the way, pipelined, so
its rate is set by its bottleneck. Concurrent loads on a server share the SSD and the
network link max-min fairly (`fairshare`); whenever a load starts or ends, every load on
that server advances its progress at the old rate and is re-timed at the new one. A load
touches only its own server's links, so the recomputation never spans the cluster.
"""

from collections.abc import Callable, Mapping

from sim.clock import Clock, Timer
from sim.fairshare import max_min_rates

# A flow as the predictor sees it: (bytes left, links crossed, cap).
Flow = tuple[float, tuple[str, ...], float]


class Transfer:
    __slots__ = ("cap", "links", "on_done", "rate", "remaining", "size", "timer", "updated_at")

    def __init__(
        self, size: float, links: tuple[str, ...], cap: float, on_done: Callable[[], None]
    ) -> None:
        self.size = size
        self.remaining = float(size)
        self.links = links
        self.cap = cap
        self.on_done = on_done
        self.rate = 0.0
        self.updated_at = 0.0
        self.timer: Timer | None = None


class ServerLinks:
    """The shared links of one server ("network", "ssd") and the loads crossing them."""

    def __init__(self, clock: Clock, capacity: dict[str, float]) -> None:
        self._clock = clock
        self.capacity = capacity
        self.active: list[Transfer] = []

    def start(
        self, size: float, links: tuple[str, ...], cap: float, on_done: Callable[[], None]
    ) -> Transfer:
        """Begin a load of `size` bytes over `links`, at most `cap` bytes/s of its own."""
        transfer = Transfer(size, links, cap, on_done)
        transfer.updated_at = self._clock.now
        self._advance()
        self.active.append(transfer)
        self._reallocate()
        return transfer

    def predict_s(self, size: float, links: tuple[str, ...], cap: float, delay: float) -> float:
        """How long a load of `size` bytes beginning `delay` seconds from now would take.

        Replays the fluid model forward from the loads in flight, as if no other load
        began: exact when none does, the scheduler's estimate of link queueing otherwise.
        """
        now = self._clock.now
        flows = [(t.remaining - t.rate * (now - t.updated_at), t.links, t.cap) for t in self.active]
        flows, _ = _run(flows, self.capacity, delay, watch=False)
        _, elapsed = _run([*flows, (size, links, cap)], self.capacity, float("inf"), watch=True)
        return elapsed

    def _finish(self, transfer: Transfer) -> None:
        self._advance()
        self.active.remove(transfer)
        transfer.remaining = 0.0
        self._reallocate()
        transfer.on_done()

    def _advance(self) -> None:
        now = self._clock.now
        for t in self.active:
            t.remaining = max(0.0, t.remaining - t.rate * (now - t.updated_at))
            t.updated_at = now

    def _reallocate(self) -> None:
        rates = max_min_rates([(t.links, t.cap) for t in self.active], self.capacity)
        for t, rate in zip(self.active, rates, strict=True):
            if rate == t.rate and t.timer is not None:
                continue
            t.rate = rate
            if t.timer is not None:
                t.timer.cancel()
            t.timer = self._clock.call_in(t.remaining / rate, self._finish, t)


def _run(
    flows: list[Flow], capacity: Mapping[str, float], horizon: float, *, watch: bool
) -> tuple[list[Flow], float]:
    """Advance `flows` by `horizon` seconds, or (`watch`) until the last flow finishes.

    Returns the flows still unfinished and the time advanced.
    """
    elapsed = 0.0
    while flows:
        rates = max_min_rates([(f[1], f[2]) for f in flows], capacity)
        left = [f[0] / r for f, r in zip(flows, rates, strict=True)]
        if watch and left[-1] <= min(left):
            return [], elapsed + left[-1]
        step = min(min(left), horizon - elapsed)
        if step <= 0:
            break
        elapsed += step
        flows = [
            (f[0] - r * step, f[1], f[2])
            for f, r, t in zip(flows, rates, left, strict=True)
            if t > step
        ]
    return flows, elapsed
