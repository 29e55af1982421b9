"""The servers, the instances on them, and the indexes a placement decision reads.

Two indexes keep decisions independent of the cluster's size: which servers hold model M
in each cache tier (updated by the caches), and, per server group, which servers have
exactly k available GPUs (updated whenever an instance takes, idles or frees GPUs). The
class is also the policies' read-only `ClusterView`.
"""

import heapq
from bisect import bisect_left, insort
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping

from policies.base import RoundCost, Running, Sleeping
from sim.model.clock import Clock
from sim.model.indexed_set import IndexedSet
from sim.model.instance import Instance
from sim.model.instance_log import InstanceLog
from sim.model.loading import cpu_phases, fastest_tier, load_phases
from sim.model.migration import round_cost
from sim.model.overlap import hidden_s
from sim.model.peer import PeerTier
from sim.model.per_model import PerModel
from sim.model.server import HOST_DISK, STARTUP_CPU, Server, host_cores
from sim.model.transfers import ServerLinks
from sim.spec import ClusterConfig, ModelSpec
from thaw_kernel.stages import Step
from thaw_kernel.tiers import CACHE_TIERS


class Cluster:
    def __init__(self, config: ClusterConfig, clock: Clock) -> None:
        self._clock = clock
        self._config = config
        self.models: dict[str, ModelSpec] = config.models
        self._holders: dict[str, PerModel[IndexedSet]] = {
            tier: PerModel(lambda _: IndexedSet()) for tier in CACHE_TIERS
        }
        self.servers: list[Server] = []
        self._by_available: list[list[IndexedSet]] = []
        # The same, ids in order, brought up to date when read (`sorted_by_available`):
        # an instance that serves a request and goes idle moves its server there and
        # back, and the order is read only by some placement decisions. Per group, the
        # servers moved since the last read, each with the count it is filed under there.
        self._sorted_by_available: list[list[list[int]]] = []
        self._unsorted: list[dict[int, int]] = []
        for g, group in enumerate(config.servers):
            self._by_available.append([IndexedSet() for _ in range(group.gpus + 1)])
            self._sorted_by_available.append([[] for _ in range(group.gpus + 1)])
            self._unsorted.append({})
            host = None
            for k in range(group.count):
                if k % group.servers_per_host == 0:  # a new host: its own cores (and disk)
                    cores = host_cores(
                        clock, float(group.host_cores), group.startup_company_slowdown
                    )
                    if group.host_disk:
                        shared = group.host_disk_shared
                        host = ServerLinks(
                            clock,
                            {HOST_DISK: group.host_disk},
                            shared={HOST_DISK: shared} if shared else None,
                        )
                server = Server(
                    len(self.servers),
                    g,
                    group,
                    clock,
                    self._cache_changed,
                    cores,
                    host,
                    config.remote_download,
                )
                self.servers.append(server)
                self._by_available[g][group.gpus].add(server.id)
                self._sorted_by_available[g][group.gpus].append(server.id)
        self._indexed_available = [s.gpus for s in self.servers]
        self._total_available = sum(self._indexed_available)
        # Server groups whose GPUs can host each model (enough GPUs, enough memory).
        self._groups_for: PerModel[tuple[int, ...]] = PerModel(self._groups_that_host)
        self._steps: PerModel[tuple[Step, ...]] = PerModel(config.steps)
        self.peer = PeerTier(clock, self.servers) if config.peer_loading else None
        self.gpu_seconds = 0.0
        # Of those: GPU time before instances were warm, and warm with no request.
        self.starting_gpu_seconds = 0.0
        self.idle_gpu_seconds = 0.0
        self.log = InstanceLog()
        self.live: Counter[str] = Counter()  # live instances per model
        # Which idle instance of a server stops first when a start needs its GPUs (the
        # keep-alive policy's choice; the longest idle unless it says otherwise).
        self.victim: Callable[[Server], Instance] = lambda server: next(iter(server.idle))
        # The same choice made in advance: the idle instances in the order `victim` takes
        # them (a wake prices its swap before it makes it).
        self.reclaim_order: Callable[[Server], Iterable[Instance]] = lambda server: server.idle
        # The sleeping engines of a model a wake could take, given a view's `can_start`
        # (`Sleepers.offers`, when engines sleep).
        self.wake_offers: Callable[[str, Callable[[int, str], bool]], list[Sleeping]] = (
            lambda model, can_start: []
        )
        # Told when a model becomes `cached` on some server where it was on none, or the
        # reverse (the queue's hook).
        self.cached_changed: Callable[[str], None] = lambda model: None
        for spec in config.models.values():
            for server_id in spec.ssd_servers:
                self.servers[server_id].ssd.admit(spec.name, spec.weights)

    def _groups_that_host(self, model: str) -> tuple[int, ...]:
        spec = self.models[model]
        return tuple(
            g
            for g, group in enumerate(self._config.servers)
            if group.can_host(spec.gpus, spec.weights)
        )

    def _cache_changed(self, tier: str, model: str, server: int, held: bool) -> None:
        was = self.cached(model)
        if held:
            self._holders[tier][model].add(server)
        else:
            self._holders[tier][model].discard(server)
            if tier == "ssd":  # evicted: its file deleted
                self.servers[server].delete_from_ssd(self.models[model].weights)
        if self.cached(model) != was:
            self.cached_changed(model)

    def _reindex(self, server: Server) -> None:
        # `available_gpus` written out: this runs twice for every request that finds its
        # instance idle.
        old, new = self._indexed_available[server.id], server.free_gpus + server.idle_gpus
        if old != new:
            buckets = self._by_available[server.group_index]
            buckets[old].move(server.id, buckets[new])
            self._unsorted[server.group_index].setdefault(server.id, old)
            self._indexed_available[server.id] = new
            self._total_available += new - old

    def sorted_by_available(self, group: int) -> list[list[int]]:
        """Per count k, the servers of `group` with k available GPUs, in id order. A
        sorted list's content is its members', so filing the moved servers now gives
        what filing each move at once would have."""
        ordered = self._sorted_by_available[group]
        moved = self._unsorted[group]
        if moved:
            available = self._indexed_available
            for server, filed in moved.items():
                now = available[server]
                if filed != now:
                    del ordered[filed][bisect_left(ordered[filed], server)]
                    insort(ordered[now], server)
            moved.clear()
        return ordered

    # --- ClusterView (read-only, for policies) ---

    @property
    def now(self) -> float:
        return self._clock.now

    def gpus_needed(self, model: str) -> int:
        return self.models[model].gpus

    def _candidate_buckets(self, model: str) -> Iterator[IndexedSet]:
        need = self.models[model].gpus
        for g in self._groups_for[model]:
            yield from self._by_available[g][need:]

    def candidate_count(self, model: str) -> int:
        return sum(len(bucket) for bucket in self._candidate_buckets(model))

    def candidate(self, model: str, k: int) -> int:
        for bucket in self._candidate_buckets(model):
            if k < len(bucket):
                return bucket[k]
            k -= len(bucket)
        raise IndexError(f"no candidate {k} for {model}")

    def candidates(self, model: str) -> Iterator[int]:
        for bucket in self._candidate_buckets(model):
            yield from bucket

    def least_occupied_candidate(self, model: str) -> int | None:
        # Per group, the fullest bucket of available GPUs holds its least occupied
        # servers, lowest id first: one look per group, whatever the cluster's size (the
        # first of `by_occupancy`, without its generators: every queue retry asks).
        best = None
        for g in self._groups_for[model]:
            buckets = self.sorted_by_available(g)
            for available in range(len(buckets) - 1, self.models[model].gpus - 1, -1):
                if buckets[available]:
                    key = (len(buckets) - 1 - available, buckets[available][0])
                    best = key if best is None else min(best, key)
                    break
        return None if best is None else best[1]

    def by_occupancy(self, model: str) -> Iterator[int]:
        # Each group's servers least occupied first, the groups merged on GPUs in use.
        need = self.models[model].gpus
        ordered = [self._least_occupied_first(g, need) for g in self._groups_for[model]]
        for _, s in ordered[0] if len(ordered) == 1 else heapq.merge(*ordered):
            yield s

    def _least_occupied_first(self, group: int, need: int) -> Iterator[tuple[int, int]]:
        """(GPUs in use, server) for the servers of `group` with at least `need` GPUs
        available: its buckets from the most available down, each in id order."""
        buckets, gpus = self.sorted_by_available(group), self._config.servers[group].gpus
        for available in range(gpus, need - 1, -1):
            for s in buckets[available]:
                yield gpus - available, s

    def can_start(self, server: int, model: str) -> bool:
        return self.can_host(server, model) and (
            self.servers[server].available_gpus >= self.models[model].gpus
        )

    def can_host(self, server: int, model: str) -> bool:
        return self.servers[server].group_index in self._groups_for[model]

    def cached(self, model: str) -> bool:
        """Whether some server's DRAM or SSD holds the checkpoint of `model`."""
        return any(self._holders[tier][model] for tier in CACHE_TIERS)

    def host_groups(self, model: str) -> tuple[int, ...]:
        """The server groups that can host `model` (enough GPUs and GPU memory)."""
        return self._groups_for[model]

    def holders(self, model: str, tier: str) -> IndexedSet:
        return self._holders[tier][model]

    def gpus_in_use(self, server: int) -> int:
        s = self.servers[server]
        return s.gpus - s.available_gpus

    def available_gpus(self, server: int) -> int:
        return self.servers[server].available_gpus

    def total_available_gpus(self) -> int:
        return self._total_available

    def steps(self, model: str) -> tuple[Step, ...]:
        return self._steps[model]

    def load_s(self, server: int, model: str, delay: float) -> float:
        if self.peer is not None:
            peer_s = self.peer.load_s(self.servers[server], self.models[model], delay)
            if peer_s is not None:
                return peer_s
        return self.tier_load_s(server, model, delay)

    def tier_load_s(self, server: int, model: str, delay: float) -> float:
        """`load_s` from the fastest tier holding the checkpoint, never a peer (a wake's
        reload): its phases (`load_phases`) replayed on the server's links domain, and
        where they take CPU (`cpu_phases`), the longer of that and their CPU work replayed
        on the host's cores (each phase really ends when both its parts have: this is
        the estimate's shortcut, exact when either side has the longer part throughout)."""
        s = self.servers[server]
        spec, tier = self.models[model], fastest_tier(s, model)
        phases = load_phases(s, spec, tier, self._config.copies(model))
        if not phases:
            return 0.0
        links_s = s.links.predict_chain_s(phases, delay)
        cpu = tuple(flow for flow in cpu_phases(s, spec, tier, phases) if flow)
        return max(links_s, s.cores.predict_chain_s(cpu, delay)) if cpu else links_s

    def copy_s(self, server: int, model: str) -> float:
        return self.models[model].pcie_s(self.servers[server].group.pcie)

    def hidden_prefill_s(self, model: str, tokens: int, offset: float = 0.0) -> float:
        if not self._config.pipelined(model):
            return 0.0
        spec = self.models[model]
        return hidden_s(spec.prefill_s(tokens), spec.layers, offset)

    def load_offset(self, server: int, model: str, delay: float) -> float:
        if self.peer is None:
            return 0.0
        return self.peer.load_offset(self.servers[server], self.models[model], delay)

    def cpu_s(self, server: int, cpu_seconds: tuple[float, ...], delay: float) -> float:
        flows = [(work, STARTUP_CPU, 1.0) for work in cpu_seconds]
        return self.servers[server].cores.predict_all_s(flows, delay)

    def running(self, server: int) -> list[Running]:
        return [
            Running(
                i.id,
                i.model.name,
                i.model.gpus,
                i.kv_total(),
                i.decoding,
                i.model.decode_step(i.decoding),
            )
            for i in self.servers[server].instances
            if i.movable
        ]

    def sleeping(self, model: str) -> list[Sleeping]:
        return self.wake_offers(model, self.can_start)

    def round_cost(self, model: str, source: int, destination: int) -> RoundCost:
        network = min(self.servers[source].group.network, self.servers[destination].group.network)
        return round_cost(self._config, model, network)

    def instance(self, server: int, instance_id: int) -> Instance | None:
        """The live instance with that id on `server`, if any."""
        for i in self.servers[server].instances:
            if i.id == instance_id:
                return i
        return None

    # --- mutations (the simulator's) ---

    def place(self, instance: Instance, leaving: list[Instance] | None = None) -> list[int]:
        """Give `instance` its GPUs: free ones, then those of idle instances (reclaimed,
        oldest idle first), then those of `leaving` (busy instances migrating away).

        A leaving instance pledges only the GPUs still lacking; they pass to `instance`
        now, though they stay occupied until it has left. Returns the GPUs each of
        `leaving` pledged: the rest are freed when it leaves (`retire`).
        """
        server = self.servers[instance.server]
        need = instance.model.gpus
        while server.free_gpus < need and server.idle:
            self.stop(self.victim(server), "reclaimed")
        lacking = need - min(need, server.free_gpus)
        pledged = []
        for other in leaving or ():
            pledged.append(min(other.model.gpus, lacking))
            lacking -= pledged[-1]
        if lacking:
            raise RuntimeError(
                f"no room for {instance.model.name} on server {server.id}: "
                "a policy chose a server that cannot start it"
            )
        server.free_gpus -= need - sum(pledged)
        self._reindex(server)
        server.instances[instance] = None
        self.live[instance.model.name] += 1
        return pledged

    def mark_idle(self, instance: Instance) -> None:
        server = self.servers[instance.server]
        server.idle[instance] = self._clock.now
        server.idle_gpus += instance.model.gpus
        self._reindex(server)

    def mark_busy(self, instance: Instance) -> None:
        server = self.servers[instance.server]
        since = server.idle.pop(instance)
        self.idle_gpu_seconds += instance.model.gpus * (self._clock.now - since)
        server.idle_gpus -= instance.model.gpus
        self._reindex(server)

    def stop(self, instance: Instance, why: str) -> None:
        """Stop an idle instance: its GPUs are freed, its checkpoint stays in DRAM."""
        self.mark_busy(instance)
        instance.stop()
        self.retire(instance, why)

    def charge_running(self, pledged_to: Mapping[Instance, int]) -> None:
        """Count the GPU time of instances still running when a run is cut short (an
        instance waiting for migrations holds only the GPUs not `pledged_to` it)."""
        now = self._clock.now
        for server in self.servers:
            for i in server.instances:
                own = i.model.gpus - pledged_to.get(i, 0)
                self.gpu_seconds += own * (now - i.allocated_at)
                self.starting_gpu_seconds += own * (min(i.ready_at, now) - i.allocated_at)
                if i in server.idle:
                    self.idle_gpu_seconds += own * (now - server.idle[i])
                self.log.ended(i, now, "running")

    def retire(self, instance: Instance, why: str, pledged: int = 0) -> None:
        """Take a stopped instance off the books, freeing its GPUs but those it pledged
        to an instance waiting for them; `why` goes to the instance log."""
        self.log.ended(instance, self._clock.now, why)
        server = self.servers[instance.server]
        if instance.model.gpus > pledged:
            server.free_gpus += instance.model.gpus - pledged
            self._reindex(server)
        del server.instances[instance]
        self.live[instance.model.name] -= 1
        now, gpus = self._clock.now, instance.model.gpus
        self.gpu_seconds += gpus * (now - instance.allocated_at)
        self.starting_gpu_seconds += gpus * (min(instance.ready_at, now) - instance.allocated_at)
