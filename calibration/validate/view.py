"""The scheduler's books of the real cluster, read by policies as a `ClusterView`.

The same policy code the simulator runs decides here, so the books keep what it reads
the way `sim.model.cluster` does: per tier and model an `IndexedSet` of holders (kept by the
simulator's own `CheckpointCache`, so LRU order and eviction are the same), and per
available-GPU count an `IndexedSet` of servers (so `random` sees candidates in the same
order and its seeded draws mean the same). A start-up is priced by the same steps as
the simulator's (the profile's measured engine: its fixed part, its CPU-bound part,
the load, the warm-up), each from the cluster's figures with the profile laid over
them, as a real ServerlessLLM scheduler estimates from measured ones: a CPU stage's
CPU-seconds at one core, a load's bytes over its tier's bandwidth (from the remote
store, the download then the load from SSD) or, where the cores cannot keep up, its CPU
work over them. They price each alone: where the simulator's estimator also sees the
start-ups and loads already sharing the host's cores and disk, these books do not (a
real scheduler knows its loads' bandwidths, not their contention). On the validation's
one host every server shares the same cores and disk, so this moves every candidate's
estimate alike. `running` lists the
busy warm instances the replay can migrate, and rounds are priced by the simulator's own
cost model (`sim.model.migration.round_cost`); `sleeping` lists none: the replay's
engines do not sleep.
"""

from collections.abc import Callable, Iterable, Iterator

from policies.base import RoundCost, Running, Sleeping
from sim.model.cache import CheckpointCache
from sim.model.indexed_set import IndexedSet
from sim.model.migration import round_cost
from sim.spec import ClusterConfig
from thaw_kernel.stages import Step
from thaw_kernel.tiers import CACHE_TIERS


class Books:
    """Servers' GPUs and checkpoint caches (the scheduler keeps the instances)."""

    def __init__(
        self,
        servers: int,
        gpus: int,
        models: dict[str, int],
        placement: dict[str, list[int]],
        caches: tuple[int, int],
        remote: bool,
        config: ClusterConfig,
        on_evict: Callable[[str, int, str], None],
    ) -> None:
        """`models`: checkpoint bytes by name; `placement`: the servers whose SSD holds
        each at the start; `caches`: each server's DRAM and SSD capacity in bytes;
        `remote`: whether a remote store holds every checkpoint; `on_evict(tier, server,
        model)`: a cache dropped a checkpoint."""
        self.models = models
        self.gpus = gpus
        self.config = config
        self.remote = remote
        self.clock: Callable[[], float] = lambda: 0.0
        self.running_on: Callable[[int], list[Running]] = lambda server: []
        self.free = [gpus] * servers
        self.idle_gpus = [0] * servers
        self._holders = {t: {m: IndexedSet() for m in models} for t in CACHE_TIERS}
        self._by_available = [IndexedSet() for _ in range(gpus + 1)]
        self._indexed = [gpus] * servers
        for s in range(servers):
            self._by_available[gpus].add(s)
        dram, ssd = caches
        self.dram = [
            CheckpointCache(dram, self._watch("dram", s, on_evict)) for s in range(servers)
        ]
        self.ssd = [CheckpointCache(ssd, self._watch("ssd", s, on_evict)) for s in range(servers)]
        for name, size in models.items():
            for server in placement[name]:
                self.ssd[server].admit(name, size)

    def _watch(
        self, tier: str, server: int, on_evict: Callable[[str, int, str], None]
    ) -> Callable[[str, bool], None]:
        def changed(model: str, held: bool) -> None:
            if held:
                self._holders[tier][model].add(server)
            else:
                self._holders[tier][model].discard(server)
                on_evict(tier, server, model)

        return changed

    def reindex(self, server: int) -> None:
        old, new = self._indexed[server], self.available_gpus(server)
        if old != new:
            self._by_available[old].discard(server)
            self._by_available[new].add(server)
            self._indexed[server] = new

    def fastest_tier(self, server: int, model: str) -> str:
        if model in self.dram[server]:
            return "dram"
        if model in self.ssd[server] or not self.remote:
            return "ssd"
        return "remote"

    # --- ClusterView ---

    @property
    def now(self) -> float:
        return self.clock()

    def steps(self, model: str) -> tuple[Step, ...]:
        return self.config.steps(model)

    def gpus_needed(self, model: str) -> int:
        return 1

    def hidden_prefill_s(self, model: str, tokens: int, offset: float = 0.0) -> float:
        return 0.0  # the validated engine loads, then prefills

    def load_offset(self, server: int, model: str, delay: float) -> float:
        return 0.0  # loads from the tiers only, each from the first layer

    def candidate_count(self, model: str) -> int:
        return sum(len(bucket) for bucket in self._by_available[1:])

    def candidate(self, model: str, k: int) -> int:
        for bucket in self._by_available[1:]:
            if k < len(bucket):
                return bucket[k]
            k -= len(bucket)
        raise IndexError(f"no candidate {k} for {model}")

    def candidates(self, model: str) -> Iterable[int]:
        for bucket in self._by_available[1:]:
            yield from bucket

    def least_occupied_candidate(self, model: str) -> int | None:
        return next(self.by_occupancy(model), None)

    def by_occupancy(self, model: str) -> Iterator[int]:
        return iter(sorted(self.candidates(model), key=lambda s: (self.gpus_in_use(s), s)))

    def can_start(self, server: int, model: str) -> bool:
        return self.available_gpus(server) >= 1

    def can_host(self, server: int, model: str) -> bool:
        return True

    def holders(self, model: str, tier: str) -> IndexedSet:
        return self._holders[tier][model]

    def gpus_in_use(self, server: int) -> int:
        return self.gpus - self.available_gpus(server)

    def available_gpus(self, server: int) -> int:
        return self.free[server] + self.idle_gpus[server]

    def total_available_gpus(self) -> int:
        return sum(self.available_gpus(s) for s in range(len(self.free)))

    def load_s(self, server: int, model: str, delay: float) -> float:
        tier = self.fastest_tier(server, model)
        return load_s(self.config, self.models[model], tier, self.config.copies(model))

    def copy_s(self, server: int, model: str) -> float:
        return self.config.models[model].pcie_s(self.config.servers[0].pcie)

    def cpu_s(self, server: int, cpu_seconds: tuple[float, ...], delay: float) -> float:
        """The stages alone on the host's cores, one core each at most."""
        cores = self.config.servers[0].host_cores
        return max(cpu_seconds) / min(1.0, cores / len(cpu_seconds))

    def running(self, server: int) -> list[Running]:
        return self.running_on(server)

    def sleeping(self, model: str) -> list[Sleeping]:
        return []  # the real replay's engines do not sleep

    def round_cost(self, model: str, source: int, destination: int) -> RoundCost:
        network = self.config.servers[0].network  # one group: the replay's servers are alike
        return round_cost(self.config, model, network)


def load_s(config: ClusterConfig, size: int, tier: str, to_host: bool = False) -> float:
    """A load of `size` bytes from `tier` on one of the replay's servers, alone, as the
    simulator prices it: through PCIe from DRAM; also through the server's SSD link and
    the host's disk from SSD; from the remote store, the download over the network link
    (and the disk it writes to) first. A phase that takes CPU takes at least its CPU work
    over the host's cores. `to_host`: into host memory only (`sim.model.loading`)."""
    group = config.servers[0]  # one group: the replay's servers are alike
    pcie = float("inf") if to_host else group.pcie
    if tier == "dram":
        return size / pcie
    disk = group.host_disk or float("inf")
    gb = size / 1e9
    read = max(
        size / min(pcie, group.ssd_read, disk),
        gb * group.load_cpu_s_per_gb / group.host_cores,
    )
    if tier != "remote":
        return read
    download = size / min(group.network, disk)
    return max(download, gb * group.download_cpu_s_per_gb / group.host_cores) + read
