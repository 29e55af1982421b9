"""The simulator auditing itself: accounting that must hold after every event.

Researchers publish numbers from this simulator, and a silent accounting error is worse
than a crash. `check_state` verifies the cluster's books (run it after every event with
`python -m sim run --check`); `check_outcome` verifies the results (every run does, at
its end). A violation raises `InvariantError` naming the time, the event and the objects
involved. The auditor reads the simulator's internals on purpose: it checks them.
"""

import itertools
from collections import Counter
from typing import TYPE_CHECKING, Protocol

import numpy as np

from sim.model.instance import SLEEPING, STOPPED, WARM, Instance
from sim.model.server import company_cap
from sim.schema import STATUSES
from thaw_kernel.tiers import CACHE_TIERS

if TYPE_CHECKING:
    from collections.abc import Collection, Mapping

    from sim.engine.request_table import RequestTable
    from sim.model.clock import Clock
    from sim.model.cluster import Cluster
    from sim.model.sleepers import Sleepers
    from sim.queues.base import QueueDiscipline
    from sim.spec import ClusterConfig


class Audited(Protocol):
    """What the auditor reads of a simulation: its books, and the instances whose start
    waits for migrations (`held`) with the GPUs their leaving sources pass on (`pledged`)."""

    config: "ClusterConfig"
    clock: "Clock"
    cluster: "Cluster"
    queue: "QueueDiscipline"
    sleepers: "Sleepers | None"
    table: "RequestTable"
    stopped_at: float | None

    @property
    def held(self) -> "Collection[Instance]": ...

    @property
    def pledged(self) -> "Mapping[Instance, int]": ...


_SLACK = 1e-9  # relative, for sums of floating-point rates and times


class InvariantError(RuntimeError):
    pass


def _fail(sim: "Audited", what: str) -> None:
    raise InvariantError(f"t={sim.clock.now!r}: {what}; this is a bug in thaw")


def check_state(sim: "Audited", previous_now: float, cpu_seen: dict[int, dict]) -> None:
    """The books after an event: time, GPUs, caches (and the loads reading them), links,
    the decision indexes and the queue discipline's own. `cpu_seen` is the caller's record
    of each server's CPU stages at the previous check, which this one updates."""
    if sim.clock.now < previous_now:
        _fail(sim, f"time went back from {previous_now!r}")
    domains = {}  # each links domain once: a server's own, or its host's (`host_disk`)
    for server in sim.cluster.servers:
        domains.setdefault(id(server.links), server)
        _check_gpus(sim, server)
        _check_caches(sim, server)
        _check_cores(sim, server, cpu_seen)
        _check_pipelined(sim, server)
        _check_sleeping(sim, server)
    for server in domains.values():
        _check_links(sim, server)
    _check_indexes(sim)
    if sim.cluster.peer is not None:
        _check_peer(sim)
    problem = sim.queue.audit()
    if problem is not None:
        _fail(sim, f"queue {sim.queue.name}: {problem}")


def _check_gpus(sim: "Audited", server) -> None:
    live = list(server.instances)
    pledged = sum(sim.pledged.get(i, 0) for i in live)
    booked = server.free_gpus + sum(i.model.gpus for i in live) - pledged
    if booked != server.gpus or server.free_gpus < 0:
        _fail(
            sim,
            f"server {server.id}: {server.free_gpus} free GPUs + instances "
            f"{[(i.model.name, i.model.gpus, i.state) for i in live]} - {pledged} pledged "
            f"!= its {server.gpus} GPUs",
        )
    occupied = sum(i.model.gpus for i in live if i not in sim.held)
    if occupied > server.gpus:
        _fail(sim, f"server {server.id}: instances occupy {occupied} of {server.gpus} GPUs")
    idle = sum(i.model.gpus for i in server.idle)
    if idle != server.idle_gpus or any(not i.is_idle for i in server.idle):
        _fail(sim, f"server {server.id}: idle list {list(server.idle)} != {server.idle_gpus}")


def _check_caches(sim: "Audited", server) -> None:
    for tier in CACHE_TIERS:
        cache = server.cache(tier)
        held = sum(cache._entries.values())
        if held != cache.used or cache.used + cache.reserved > cache.capacity:
            _fail(
                sim,
                f"server {server.id} {tier}: {cache.used} bytes used, entries hold {held}, "
                f"{cache.reserved} reserved, capacity {cache.capacity}",
            )
        for model in sim.config.models:
            if (model in cache) != (server.id in sim.cluster.holders(model, tier)):
                _fail(sim, f"server {server.id} {tier}: the holders index is wrong for {model}")
            loads = server.reading[tier, model]
            if cache._pins.get(model, 0) != loads or (loads and model not in cache):
                _fail(
                    sim,
                    f"server {server.id} {tier}: {model} has {cache._pins.get(model, 0)} pins "
                    f"for {loads} loads reading it",
                )


def _check_links(sim: "Audited", server) -> None:
    links = server.links
    for t in links.active:
        if t.rate > t.cap * (1 + _SLACK) or t.rate <= 0:
            _fail(sim, f"server {server.id}: a load runs at {t.rate} B/s, its cap {t.cap}")
        # Clamped as `ServerLinks._advance` clamps: a load due to end at this instant, by a
        # timer not yet fired, may be a rounding past done.
        if t.progress is not None and _regresses(
            [
                *t.progress,
                (
                    sim.clock.now,
                    1 - max(0.0, t.remaining - t.rate * (sim.clock.now - t.updated_at)) / t.size,
                ),
            ]
        ):
            _fail(sim, f"server {server.id}: a load's recorded progress goes back {t.progress}")
    saturated = set()
    for link, capacity in links.capacity_with([(t.links, t.cap) for t in links.active]).items():
        total = sum(t.rate for t in links.active if link in t.links)
        if total > capacity * (1 + _SLACK):
            _fail(sim, f"server {server.id} {link}: loads take {total} of {capacity} B/s")
        if total >= capacity * (1 - _SLACK):
            saturated.add(link)
    # Max-min: a load below its cap is held back by a saturated link on which no load is
    # faster than it (else that faster load could yield to it).
    for t in links.active:
        if t.rate >= t.cap * (1 - _SLACK):
            continue
        if not any(
            all(u.rate <= t.rate * (1 + _SLACK) for u in links.active if link in u.links)
            for link in t.links
            if link in saturated
        ):
            _fail(
                sim,
                f"server {server.id}: a load over {t.links} runs at {t.rate} B/s, below its "
                f"cap {t.cap}, with no saturated link where it is among the fastest",
            )


def _regresses(points: list[tuple[float, float]]) -> bool:
    """Whether (time, fraction loaded) points step back in either, or leave [0, 1]."""
    pairs = itertools.pairwise(points)
    return any(t1 < t0 or f1 < f0 * (1 - _SLACK) for (t0, f0), (t1, f1) in pairs) or not all(
        0.0 <= f <= 1.0 for _, f in points
    )


def _check_pipelined(sim: "Audited", server) -> None:
    """Execute-while-load may only bring a first token forward: the effective ready time
    of a prefill that ran behind the load is never after the load's end."""
    for i in server.instances:
        if i.pipelined is not None and i.pipelined[1] > i.ready_at * (1 + _SLACK):
            _fail(sim, f"instance {i.id}: effective ready {i.pipelined[1]} after {i.ready_at}")


def _check_sleeping(sim: "Audited", server) -> None:
    """Sleeping engines hold no GPU and no request, their kept GPU memory fits the room
    left for them, and level 1's weights are what the DRAM reserves."""
    sleepers = sim.sleepers
    if sleepers is None:
        if server.sleeping or server.dram.reserved:
            _fail(sim, f"server {server.id}: engines asleep with sleeping off")
        return
    kept = weights = 0
    for i in server.sleeping:
        if i.state != SLEEPING or i in server.instances or i.occupancy:
            _fail(sim, f"server {server.id}: instance {i.id} asleep but {i.state}, on GPUs")
        if i not in sleepers.asleep[i.model.name]:
            _fail(sim, f"server {server.id}: instance {i.id} asleep but not indexed")
        kept += sleepers.kept(i)
        spec = sim.config.sleep_of(i.model.name)
        weights += i.model.weights if spec is not None and spec.level == 1 else 0
    room = server.gpus * sleepers.room[server.group_index]
    if kept != server.sleep_memory or kept > room:
        _fail(sim, f"server {server.id}: sleeping engines keep {kept} B ({room} B allowed)")
    for i in server.copying:  # woken at level 1, their weights still in DRAM
        if i not in server.instances or i.state == WARM:
            _fail(sim, f"server {server.id}: instance {i.id} copying its weights but {i.state}")
        weights += i.model.weights
    if weights != server.dram.reserved:
        _fail(sim, f"server {server.id}: DRAM reserves {server.dram.reserved} B for {weights}")


def _check_cores(sim: "Audited", server, cpu_seen: dict[int, dict]) -> None:
    """The host cores: never over-committed, none idle while a CPU flow (a start-up's CPU
    stage, one core at most, or a load's CPU work, at most its own cap) runs below what it
    asks (a start-up in company: its cap over 1 + the group's slowdown), and CPU work
    conserved: since the last event every flow progressed by exactly its rate times the
    time (one that ended, by all it had left)."""
    cores = server.cores
    capacity = cores.capacity["cores"]
    total = sum(t.rate for t in cores.active)
    if total > capacity * (1 + _SLACK) or any(t.rate > t.cap * (1 + _SLACK) for t in cores.active):
        _fail(sim, f"server {server.id}: CPU stages take {total} of {capacity} cores")
    # A start-up in company asks less than its cap (the group's slowdown).
    slowdown = server.group.startup_company_slowdown if len(cores.active) > 1 else 0.0
    below = [
        t for t in cores.active if t.rate < company_cap(t.links, t.cap, slowdown) * (1 - _SLACK)
    ]
    if below and total < capacity * (1 - _SLACK):
        _fail(
            sim,
            f"server {server.id}: {len(below)} CPU flows run below what they ask while the "
            f"CPU stages use only {total} of {capacity} cores",
        )
    now = sim.clock.now
    seen = cpu_seen.get(server.id, {})
    for flow, (remaining, rate, at) in seen.items():
        expected = remaining - rate * (now - at)
        left = flow.remaining - flow.rate * (now - flow.updated_at)
        if abs(left - expected) > _SLACK * flow.size + _SLACK:
            _fail(
                sim,
                f"server {server.id}: a CPU stage of {flow.size} CPU-seconds has {left} left, "
                f"{expected} by its rate since t={at!r}",
            )
    for flow in cores.active:
        if flow not in seen and flow.remaining != flow.size:
            _fail(sim, f"server {server.id}: a CPU stage began with {flow.remaining} left")
    if cores.active or seen:
        cpu_seen[server.id] = {
            t: (t.remaining - t.rate * (now - t.updated_at), t.rate, now) for t in cores.active
        }


def _check_peer(sim: "Audited") -> None:
    """The peer fabric's links (a chain crossing a link twice takes its rate twice) and the
    chains' pins: every member live, pinned once per chain it is in, never on an idle list."""
    peer = sim.cluster.peer
    used: Counter[str] = Counter()
    for t in peer.fabric.active:
        if t.rate > t.cap * (1 + _SLACK) or t.rate <= 0:
            _fail(sim, f"peer fabric: a chain streams at {t.rate} B/s, its cap {t.cap}")
        for link in t.links:
            used[link] += t.rate
    for link, total in used.items():
        if total > peer.fabric.capacity[link] * (1 + _SLACK):
            _fail(sim, f"peer fabric {link}: chains take {total} of {peer.fabric.capacity[link]}")
    pins: Counter[Instance] = Counter()
    for model, chain in peer.chains.items():
        if chain.transfer is not None and chain.transfer not in peer.fabric.active:
            _fail(sim, f"the {model} chain's segment is not on the fabric")
        if chain.planned < 0 or chain.tail.model.name != model:
            _fail(sim, f"the {model} chain: {chain.planned} planned, tail {chain.tail.model.name}")
        pins.update(chain.members)
    for server in sim.cluster.servers:
        for i in server.instances:
            if i.sending != pins[i] or (i.sending and i in server.idle):
                _fail(sim, f"instance {i.id}: pinned {i.sending} times, in {pins[i]} chains")
    if any(i.state == STOPPED for i in pins):
        _fail(sim, "a stopped instance is still a chain's member")


def _check_indexes(sim: "Audited") -> None:
    cluster = sim.cluster
    total = 0
    for server in cluster.servers:
        available = server.available_gpus
        total += available
        g = server.group_index
        filed = server.id in cluster._by_available[g][available]
        if not filed or server.id not in cluster.sorted_by_available(g)[available]:
            _fail(sim, f"server {server.id}: indexed under the wrong available-GPU count")
    if total != cluster.total_available_gpus():
        _fail(sim, f"{total} GPUs available, the cluster counts {cluster.total_available_gpus()}")
    for g, group in enumerate(sim.config.servers):  # each group's order, for each need
        members = [s for s in cluster.servers if s.group_index == g]
        for need in range(1, group.gpus + 1):
            ordered = [s for _, s in cluster._least_occupied_first(g, need)]
            room = [s.id for s in members if s.available_gpus >= need]
            if ordered != sorted(room, key=lambda s: (cluster.gpus_in_use(s), s)):
                _fail(sim, f"group {g}: servers with {need} GPUs free out of occupancy order")


def check_outcome(sim: "Audited") -> None:
    """The results at the end: every request ended once, its TTFT splits exactly into its
    parts, and the cluster is empty again."""
    t = sim.table
    pending = np.flatnonzero(t.status == STATUSES.index("pending"))
    if len(pending):
        _fail(sim, f"{len(pending)} requests never ended (first: #{pending[0]})")
    done = t.status == STATUSES.index("done")
    parts = t.queue_s[done] + t.startup_s[done] + t.prefill_s[done]
    off = ~np.isclose(parts, t.ttft_s[done], rtol=_SLACK, atol=_SLACK)
    if off.any():
        i = int(np.flatnonzero(done)[np.flatnonzero(off)[0]])
        _fail(sim, f"request #{i}: queue + startup + prefill != TTFT {t.ttft_s[i]}")
    if (t.queue_s[done] < -_SLACK).any() or (t.prefill_s[done] <= 0).any():
        _fail(sim, "a request has a negative queue or a non-positive prefill")
    cluster = sim.cluster
    split = cluster.starting_gpu_seconds + cluster.idle_gpu_seconds
    if min(cluster.starting_gpu_seconds, cluster.idle_gpu_seconds) < 0 or split > (
        cluster.gpu_seconds * (1 + _SLACK) + _SLACK
    ):
        _fail(sim, f"starting + idle GPU-seconds {split} exceed the {cluster.gpu_seconds} used")
    if sim.stopped_at is not None:
        return  # cut short: instances may still run
    for server in sim.cluster.servers:
        busy = server.links.active or server.links.planned
        peer = sim.cluster.peer
        busy = busy or (peer is not None and (peer.fabric.active or peer.chains))
        busy = busy or server.cores.active or server.cores.planned or server.sleeping
        if server.instances or busy:
            _fail(sim, f"server {server.id} still runs instances or loads at the end")
