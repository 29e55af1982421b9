"""A multicast chain: one model's checkpoint streamed from a warm instance down a line of
receivers, each forwarding what it receives (BlitzScale, OSDI '25; lambda-Scale, 2025).

The fluid rule. The chain source -> r1 -> ... -> rk moves every byte over every hop,
pipelined, so it is ONE flow over the links of all its hops (a link crossed by two hops
counts twice) at the rate max-min fair sharing gives it: the slowest hop paces it, and
k receivers cost each hop one pass, not the source k passes. The source streams the
checkpoint as a carousel: a receiver joins the stream where it is, wraps around, and is
done once it has received the checkpoint's size since it joined. With s(t) the bytes
streamed so far, a receiver that joins at s0 ends when s = s0 + W. The flow is timed in
segments, each ending at the next receiver's target, so a receiver costs one event.

Every member (the source from the decision, a receiver from its join) is pinned until the
chain ends: it keeps relaying, and serving once warm, but cannot be stopped, migrated or
preempted. The chain ends once no receiver is in flight or decided but not yet joined.

A receiver whose engine executes while loading (`sim.model.overlap`) needs its bytes'
arrival over time: while one is in flight the chain logs s at each re-timing of its flow
(from the earliest such receiver's join on), from which the receiver's (time, fraction
received) points follow, and where in the weights it joined the stream.
"""

import heapq
import itertools
from collections.abc import Callable

from sim.model.clock import Clock
from sim.model.instance import Instance
from sim.model.transfers import ServerLinks, Transfer

Hop = Callable[[int, int, int], tuple[tuple[str, ...], float]]  # (from, to, gpus) -> links, cap


class Chain:
    def __init__(
        self,
        chain_id: int,
        clock: Clock,
        fabric: ServerLinks,
        source: Instance,
        hop: Hop,
        on_end: Callable[["Chain"], None],
    ) -> None:
        self.id = chain_id
        self.members: list[Instance] = [source]  # the source, then receivers as they joined
        self.planned = 0  # receivers decided that have not joined yet
        self.links: tuple[str, ...] = ()  # every hop's links, in order
        self.cap = float("inf")  # the slowest hop's own cap
        self.transfer: Transfer | None = None  # the segment in flight
        self._clock = clock
        self._fabric = fabric
        self._hop = hop
        self._on_end = on_end
        self._weights = float(source.model.weights)
        self._targets: list[tuple[float, int, Callable[[], None]]] = []  # (s to reach, order, cb)
        self._order = itertools.count()
        self._base = 0.0  # s when the segment in flight began
        # (time, s) at each re-timing of the flow, kept while a receiver pipelines behind
        # it, from the earliest such receiver's join; their join times.
        self._log: list[tuple[float, float]] | None = None
        self._logged: list[float] = []
        source.sending += 1

    @property
    def tail(self) -> Instance:
        return self.members[-1]

    def streamed(self) -> float:
        """s: the bytes the chain has streamed so far."""
        t = self.transfer
        if t is None:
            return self._base
        return self._base + t.size - (t.remaining - t.rate * (self._clock.now - t.updated_at))

    def join(self, receiver: Instance, on_done: Callable[[], None], logged: bool = False) -> float:
        """`receiver` joins at the tail; `on_done` once it holds the whole checkpoint.
        Returns s at its join; `logged`: the chain logs the stream until `received`."""
        links, cap = self._hop(self.tail.server, receiver.server, receiver.model.gpus)
        receiver.peer_source, receiver.chain = self.tail.id, self.id
        receiver.sending += 1
        self.members.append(receiver)
        self.planned -= 1
        self.links += links
        self.cap = min(self.cap, cap)
        joined_at = self.streamed()
        if logged:
            if self._log is None:
                self._log = []
            self._logged.append(self._clock.now)
            self._log.append((self._clock.now, joined_at))
        heapq.heappush(self._targets, (joined_at + self._weights, next(self._order), on_done))
        if self.transfer is None:
            self._segment()
        else:  # the new target is the farthest: the segment in flight still ends first
            self._fabric.reroute(self.transfer, self.links, self.cap)
        return joined_at

    def received(self, joined_at: float, since: float) -> list[tuple[float, float]]:
        """The (time, fraction received) points of a logged receiver that joined at s =
        `joined_at` at time `since`, up to now, when it holds the whole checkpoint; the
        log then keeps only what the receivers still in flight need."""
        assert self._log is not None, "received() is for a receiver that joined logged"
        now = self._clock.now
        points = [(t, (s - joined_at) / self._weights) for t, s in self._log if since <= t < now]
        self._logged.remove(since)
        if self._logged:
            earliest = min(self._logged)
            self._log = [(t, s) for t, s in self._log if t >= earliest]
        else:
            self._log = None
        return [*points, (now, 1.0)]

    def position_in(self, delay: float) -> float:
        """s `delay` seconds from now at the present rate (assuming no other join or
        re-timing): the stream stops at its farthest target, where a decided receiver
        that has not joined yet holds it."""
        if self.transfer is None:
            return self._base
        farthest = max(target for target, _, _ in self._targets)
        return min(self.streamed() + self.transfer.rate * delay, farthest)

    def offset(self, streamed: float) -> float:
        """Where in the weights (a fraction, in forward order) the stream is once it has
        streamed `streamed` bytes: the carousel wraps at the checkpoint's size."""
        return streamed % self._weights / self._weights

    def _retimed(self, _rate: float) -> None:
        if self._log is not None:
            self._log.append((self._clock.now, self.streamed()))

    def _segment(self) -> None:
        size = self._targets[0][0] - self._base
        self.transfer = self._fabric.start(
            size, self.links, self.cap, self._segment_done, on_rate=self._retimed
        )

    def _segment_done(self) -> None:
        self.transfer = None
        self._base = self._targets[0][0]
        while self._targets and self._targets[0][0] <= self._base:
            heapq.heappop(self._targets)[2]()
        if self._targets:
            self._segment()
        elif self.planned == 0:
            self._on_end(self)
