"""The peer tier: where a new instance's checkpoint comes from when a warm instance of its
model holds it on its GPUs, and the links that carry it.

A hop from a GPU instance to a new one crosses the server's GPU interconnect when both
are on one server (`gpu_link` per GPU, the server's GPUs sharing `gpus * gpu_link`, as
through an NVSwitch) and otherwise the source server's NIC out and the receiver's NIC in
on the compute network (`compute_network` per server, apart from the storage `network`).
These links form one fluid domain for the whole cluster (`fabric`), shared max-min
fairly by the chains in flight; they cross none of the storage links, so a peer load
and the tiered loads never slow each other down.

The choice is by nominal rate, as `fastest_tier` prefers DRAM over SSD over remote: the
peer source (the tail of the model's chain if one is forming, else the warm instance
with the fastest hop, same server first) wins if its hop, capped by the chain, is faster
than the fastest tier holding the checkpoint on the receiver's server; ties keep the tier.
"""

import itertools
import math
from collections.abc import Callable

from sim.model.clock import Clock
from sim.model.fairshare import max_min_rates
from sim.model.instance import WARM, Instance
from sim.model.loading import fastest_tier, load_phases
from sim.model.peer.chain import Chain
from sim.model.server import Server
from sim.model.transfers import ServerLinks
from sim.spec import ModelSpec
from thaw_kernel.tiers import Tier


def gpu_link(server: int) -> str:
    return f"gpu_link:{server}"


def nic_out(server: int) -> str:
    return f"nic_out:{server}"


def nic_in(server: int) -> str:
    return f"nic_in:{server}"


class PeerLoad:
    """A checkpoint load down a chain: begins (joins the chain) after the start-up delay."""

    tier = Tier.PEER

    def __init__(self, clock: Clock, server: Server, model: ModelSpec, chain: Chain) -> None:
        self.server = server
        self.model = model
        self.chain = chain
        self.receiver: Instance | None = None  # set by the simulator once the instance exists
        self._clock = clock
        self.began_at = self.ended_at = math.nan  # the instance log's
        # Its (time, fraction received) points, recorded when a prefill pipelines behind it,
        # and where in the weights it joined the stream (`sim.model.overlap`).
        self.progress: list[tuple[float, float]] | None = None
        self.offset = 0.0
        self._joined_at = math.nan  # s when it joined the stream
        self._on_done: Callable[[], None] = lambda: None
        chain.planned += 1

    def start_in(self, delay: float, on_done: Callable[[], None]) -> None:
        self.began_at = self._clock.now + delay
        self._on_done = on_done
        self._clock.call_in(delay, self._join)

    def _join(self) -> None:
        assert self.receiver is not None, "the simulator names the receiver before its start"
        self._joined_at = self.chain.join(self.receiver, self._done, self.progress is not None)
        self.offset = self.chain.offset(self._joined_at)

    def _done(self) -> None:
        self.ended_at = self._clock.now
        if self.progress is not None:
            self.progress = self.chain.received(self._joined_at, self.began_at)
        self._on_done()

    def durations(self) -> tuple[float, float]:
        """Seconds from joining the chain to its end; it downloads nothing (NaN)."""
        return self.ended_at - self.began_at, math.nan


class PeerTier:
    def __init__(self, clock: Clock, servers: list[Server]) -> None:
        self._clock = clock
        self._servers = servers
        capacity = {}
        for s in servers:
            capacity[gpu_link(s.id)] = s.gpus * s.group.gpu_link
            capacity[nic_out(s.id)] = capacity[nic_in(s.id)] = s.group.compute_network
        self.fabric = ServerLinks(clock, capacity)
        self.chains: dict[str, Chain] = {}  # the chain forming, per model
        self._ids = itertools.count()
        # The simulator's hook: a chain member is free to go idle again.
        self.released: Callable[[Instance], None] = lambda instance: None

    def hop(self, source: int, receiver: int, gpus: int) -> tuple[tuple[str, ...], float]:
        """The links a hop crosses and its own cap (`gpus` GPUs receiving)."""
        if source == receiver:
            return (gpu_link(source),), gpus * self._servers[source].group.gpu_link
        a, b = self._servers[source].group, self._servers[receiver].group
        return (nic_out(source), nic_in(receiver)), min(a.compute_network, b.compute_network)

    def _plan(self, server: Server, model: ModelSpec) -> tuple[Instance, Chain | None] | None:
        """The instance the peer load to `server` would receive from (with the chain it
        joins, None for a new chain), if a peer beats the fastest tier; None otherwise."""
        chain = self.chains.get(model.name)
        if chain is not None:
            source, cap = chain.tail, chain.cap
        else:
            source, cap = self._source(server.id, model), float("inf")
            if source is None:
                return None
        rate = min(cap, self.hop(source.server, server.id, model.gpus)[1])
        return (source, chain) if rate > _tier_rate(server, model) else None

    def _source(self, server: int, model: ModelSpec) -> Instance | None:
        """The warm instance of `model` with the fastest hop to `server`, oldest first; not
        one idle on `server` itself, whose GPUs the new instance may be about to reclaim."""
        best, best_rate = None, 0.0
        for s in [self._servers[server], *self._servers]:
            for i in s.instances:
                if i.model.name != model.name or i.state != WARM or i.migrating or i.reserved:
                    continue
                if s.id == server and i in s.idle:
                    continue
                rate = self.hop(i.server, server, model.gpus)[1]
                if rate > best_rate:
                    best, best_rate = i, rate
        return best

    def load(self, server: Server, model: ModelSpec) -> PeerLoad | None:
        """The peer load of `model` onto `server`, if a peer is the fastest source."""
        plan = self._plan(server, model)
        if plan is None:
            return None
        source, chain = plan
        if chain is None:
            chain = Chain(next(self._ids), self._clock, self.fabric, source, self.hop, self._end)
            self.chains[model.name] = chain
        return PeerLoad(self._clock, server, model, chain)

    def load_s(self, server: Server, model: ModelSpec, delay: float) -> float | None:
        """How long the peer load of `model` onto `server` would take, if one would be
        made: a new chain's flow replayed on the fabric (`ServerLinks.predict_s`); joining
        a chain, the checkpoint at the rate the chain would get with the new hop, the
        other flows as they are now."""
        plan = self._plan(server, model)
        if plan is None:
            return None
        source, chain = plan
        links, cap = self.hop(source.server, server.id, model.gpus)
        if chain is None or chain.transfer is None:
            if chain is not None:
                links, cap = chain.links + links, min(chain.cap, cap)
            return self.fabric.predict_s(model.weights, links, cap, delay)
        flows = [
            (chain.links + links, min(chain.cap, cap)) if t is chain.transfer else (t.links, t.cap)
            for t in self.fabric.active
        ]
        rates = max_min_rates(flows, self.fabric.capacity)
        return model.weights / rates[self.fabric.active.index(chain.transfer)]

    def load_offset(self, server: Server, model: ModelSpec, delay: float) -> float:
        """Where in the weights the peer load of `model` onto `server` beginning in `delay`
        seconds would join its chain's stream (0 for a new chain, or no peer load): the
        stream's position then (`Chain.position_in`)."""
        if model.name not in self.chains or self._plan(server, model) is None:
            return 0.0
        chain = self.chains[model.name]
        return chain.offset(chain.position_in(delay))

    def _end(self, chain: Chain) -> None:
        del self.chains[chain.tail.model.name]
        for member in chain.members:
            member.sending -= 1
            self.released(member)


def _tier_rate(server: Server, model: ModelSpec) -> float:
    """The uncontended rate of a load from the fastest tier holding `model` on `server`:
    each of its phases (`load_phases`: the whole checkpoint each) at the least of its cap
    and its links' capacities, one after the other."""
    phases = load_phases(server, model, fastest_tier(server, model.name))
    capacity = server.links.capacity
    rates = [min([cap, *(capacity[link] for link in links)]) for _, links, cap in phases]
    return rates[0] if len(rates) == 1 else 1.0 / sum(1.0 / rate for rate in rates)
