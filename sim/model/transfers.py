"""Checkpoint loads as fluid flows over one server's shared links (and, the same way,
CPU-bound start-up stages as flows of CPU-seconds over its host cores: `sim.model.startup`).

A load streams from its tier to the GPUs through every link on the way, pipelined, so
its rate is set by its bottleneck. Concurrent loads on a server share the SSD and the
network link max-min fairly (`fairshare`); whenever a load starts or ends, every load on
that server advances its progress at the old rate and is re-timed at the new one. A load
touches only its own server's links (or, when a host's servers share one disk, its
host's), so the recomputation never spans the cluster.

A flow may name the flows that follow it (`then`: a download's load from the SSD), which
begin the moment it ends; the estimates replay them too.
"""

from collections.abc import Callable, Sequence

from sim.model.clock import Clock, Timer
from sim.model.fairshare import max_min_rates

Flow = tuple[float, tuple[str, ...], float]  # (size, links crossed, own cap)
# The rates of flows (links crossed, cap) over links of given capacities.
Sharing = Callable[[list[tuple[tuple[str, ...], float]], dict[str, float]], list[float]]


class Transfer:
    __slots__ = (
        "cap",
        "links",
        "on_done",
        "on_rate",
        "progress",
        "rate",
        "remaining",
        "size",
        "then",
        "timer",
        "updated_at",
    )

    def __init__(
        self,
        size: float,
        links: tuple[str, ...],
        cap: float,
        on_done: Callable[[], None],
        progress: list[tuple[float, float]] | None = None,
        then: tuple[Flow, ...] = (),
        on_rate: Callable[[float], None] | None = None,
    ) -> None:
        self.size = size
        self.remaining = float(size)
        self.links = links
        self.cap = cap
        self.on_done = on_done
        self.rate = 0.0
        self.updated_at = 0.0
        self.timer: Timer | None = None
        # (time, fraction done) at its start, each rate change and its end, if asked for.
        self.progress = progress
        self.then = then  # the flows its owner begins when it ends, for the estimates
        self.on_rate = on_rate  # told each new rate (a load's CPU work keeps its pace)


class ServerLinks:
    """The shared links of one server ("network", "ssd"), or of a host's servers and its
    disk, and the loads crossing them; or a host's cores and the CPU flows on them.

    `share`: how the links divide among the flows crossing them (max-min fairly unless
    told otherwise). `shared`: per link, the capacity it has instead while two or more
    flows cross it (a disk whose concurrent streams together read less, or more, than
    one stream alone)."""

    def __init__(
        self,
        clock: Clock,
        capacity: dict[str, float],
        share: Sharing = max_min_rates,
        shared: dict[str, float] | None = None,
    ) -> None:
        self._clock = clock
        self.capacity = capacity
        self.shared = shared or {}
        self._share = share
        self.active: list[Transfer] = []
        # (at, size, links, cap, then) of the loads to begin at `at`.
        self.planned: list[tuple[float, float, tuple[str, ...], float, tuple[Flow, ...]]] = []

    @property
    def now(self) -> float:
        return self._clock.now

    def call_in(self, delay: float, action: Callable[[], None]) -> None:
        """`action` in `delay` seconds, on the clock the links run on."""
        self._clock.call_in(delay, action)

    def start(
        self,
        size: float,
        links: tuple[str, ...],
        cap: float,
        on_done: Callable[[], None],
        progress: list[tuple[float, float]] | None = None,
        then: tuple[Flow, ...] = (),
        on_rate: Callable[[float], None] | None = None,
    ) -> Transfer:
        """Begin a load of `size` bytes over `links`, at most `cap` bytes/s of its own;
        its progress over time is appended to `progress` if given (`sim.model.overlap`).
        `then`: the flows `on_done` will begin, known to the estimates meanwhile;
        `on_rate`: told the load's rate whenever it changes."""
        transfer = Transfer(size, links, cap, on_done, progress, then, on_rate)
        transfer.updated_at = self._clock.now
        self._advance()
        self.active.append(transfer)
        self._reallocate()
        return transfer

    def start_in(
        self,
        delay: float,
        size: float,
        links: tuple[str, ...],
        cap: float,
        on_done: Callable[[], None],
        progress: list[tuple[float, float]] | None = None,
        then: tuple[Flow, ...] = (),
        on_rate: Callable[[float], None] | None = None,
        started: Callable[[Transfer], None] | None = None,
    ) -> None:
        """Begin a load `delay` seconds from now; known meanwhile to `predict_s`.
        `started`: given the load as it begins."""
        planned = (self._clock.now + delay, size, links, cap, then)
        self.planned.append(planned)

        def begin() -> None:
            self.planned.remove(planned)
            transfer = self.start(size, links, cap, on_done, progress, then, on_rate)
            if started is not None:
                started(transfer)

        self._clock.call_in(delay, begin)

    def reroute(self, transfer: Transfer, links: tuple[str, ...], cap: float) -> None:
        """Change the links and cap of a load in flight (a multicast chain gained a hop)."""
        self._advance()
        transfer.links = links
        transfer.cap = cap
        self._reallocate()

    def predict_s(self, size: float, links: tuple[str, ...], cap: float, delay: float) -> float:
        """How long a load of `size` bytes beginning `delay` seconds from now would take.

        Replays the fluid model forward from the loads in flight and those planned to
        begin, as if no other load were decided: exact when none is, the scheduler's
        estimate of the queueing on the links otherwise.
        """
        return self.predict_all_s([(size, links, cap)], delay)

    def predict_all_s(self, new: list[Flow], delay: float) -> float:
        """As `predict_s`, for flows (size, links, cap) that begin together `delay`
        seconds from now: how long until the last of them ends."""
        return self._replay([(flow,) for flow in new], delay)

    def predict_chain_s(self, phases: tuple[Flow, ...], delay: float) -> float:
        """As `predict_s`, for one load run as `phases`, each beginning when the one
        before it ends (a download, then the load from the SSD)."""
        return self._replay([phases], delay)

    def _replay(self, chains: list[tuple[Flow, ...]], delay: float) -> float:
        """Seconds from `delay` until the last of `chains` ends, in the fluid model."""
        now = self._clock.now
        # [bytes left, links, cap, one of the new chains', the flows that follow it]
        flows = [
            [t.remaining - t.rate * (now - t.updated_at), t.links, t.cap, False, t.then]
            for t in self.active
        ]
        # (seconds from now, order, flow): planned loads join before the new ones on ties.
        joins = [
            (at - now, k, [b, ls, c, False, then])
            for k, (at, b, ls, c, then) in enumerate(self.planned)
        ]
        joins += [
            (delay, len(joins) + k, [float(b), ls, c, True, tuple(rest)])
            for k, ((b, ls, c), *rest) in enumerate(chains)
        ]
        joins.sort(key=lambda j: j[:2])
        chained = any(f[4] for f in flows) or any(j[2][4] for j in joins)
        mine = len(chains)  # new chains not yet ended
        t, since = 0.0, None  # since: seconds since the new flows began
        while True:
            while joins and joins[0][0] <= t:
                flow = joins.pop(0)[2]
                flows.append(flow)
                since = 0.0 if flow[3] else since
            if not flows:
                t = joins[0][0]
                continue
            pairs = [(f[1], f[2]) for f in flows]
            rates = self._share(pairs, self.capacity_with(pairs))
            left = [f[0] / r for f, r in zip(flows, rates, strict=True)]
            step = min(min(left), joins[0][0] - t if joins else float("inf"))
            if since is not None:
                ended = [  # the new chains' last flows ending
                    dt
                    for f, dt in zip(flows, left, strict=True)
                    if f[3] and dt <= step and not f[4]
                ]
                mine -= len(ended)
                if mine == 0:
                    return since + max(ended)
            for f, r in zip(flows, rates, strict=True):
                f[0] -= r * step
            if chained:  # a flow that ends hands over to the next of its chain at once
                following = [
                    [float(f[4][0][0]), f[4][0][1], f[4][0][2], f[3], f[4][1:]]
                    for f, dt in zip(flows, left, strict=True)
                    if dt <= step and f[4]
                ]
                flows = [f for f, dt in zip(flows, left, strict=True) if dt > step] + following
            else:
                flows = [f for f, dt in zip(flows, left, strict=True) if dt > step]
            t += step
            if since is not None:
                since += step

    def _finish(self, transfer: Transfer) -> None:
        self._advance()
        self.active.remove(transfer)
        transfer.remaining = 0.0
        if transfer.progress is not None:
            transfer.progress.append((self._clock.now, 1.0))
        self._reallocate()
        transfer.on_done()

    def _advance(self) -> None:
        now = self._clock.now
        for t in self.active:
            t.remaining = max(0.0, t.remaining - t.rate * (now - t.updated_at))
            t.updated_at = now

    def capacity_with(self, flows: Sequence[tuple[Sequence[str], float]]) -> dict[str, float]:
        """Per link, its `shared` capacity where two or more of `flows` (links, cap) cross
        it, else its capacity (without `shared`, the capacities as they are, at no cost)."""
        if not self.shared:
            return self.capacity
        capacity = self.capacity
        for link, value in self.shared.items():
            if sum(link in links for links, _ in flows) >= 2:
                capacity = {**capacity, link: value}
        return capacity

    def _reallocate(self) -> None:
        flows = [(t.links, t.cap) for t in self.active]
        rates = self._share(flows, self.capacity_with(flows))
        for t, rate in zip(self.active, rates, strict=True):
            if rate == t.rate and t.timer is not None:
                continue
            t.rate = rate
            if t.progress is not None:
                t.progress.append((t.updated_at, 1.0 - t.remaining / t.size))
            if t.timer is not None:
                t.timer.cancel()
            t.timer = self._clock.call_in(t.remaining / rate, self._finish, t)
            if t.on_rate is not None:
                t.on_rate(rate)
