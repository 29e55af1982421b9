"""Sleeping engines (vLLM sleep mode; Torpor, ATC '25; Aegaeon, SOSP '25): an idle
instance whose keep-alive expired may sleep instead of stopping, and a request for its
model wakes it without a new start-up.

Asleep, an engine holds no GPU: its GPUs are free for an awake instance, while it keeps
its sleep table's `gpu_memory` on each of them (`sim.config.sleep`). GPU memory is pooled
per server: each engine asleep keeps at most, on each of its GPUs, what the largest model
the server can host leaves of a GPU's memory, and all of them together at most that much
per GPU of the server, so an awake instance fits beside them (exactly, were the sleeping
engines spread evenly over the GPUs; the simulator does not track which GPU is which).
Level 1 also keeps the weights in the server's DRAM (reserved in its DRAM cache, evicting
cached checkpoints as a load would), until a wake's copy of them to the GPUs ends; an
engine that finds no room stops instead.

Waking takes free GPUs, then those of idle instances in the order starts reclaim them
(the keep-alive policy's), each put to sleep in turn if it can (a swap: the wake waits for
a level-1 engine's weights to cross to DRAM over its PCIe lanes) or stopped as a start
would. It then lasts, at level 1, the host-to-GPU copy of the weights over the instance's
own PCIe lanes (weights / (gpus x pcie)); at level 2, a reload from the fastest tier that
holds the checkpoint (pinned before the swap, as a start's load is from its decision),
sharing the server's links as a cold start's load does. `wake_s` prices a wake without
making it, the one estimate both the policies are offered and the wake records. Falling
asleep by keep-alive is instant (no one waits for those GPUs; docs/sleep-and-overlap.md
says what that leaves out). Asleep, an engine is
charged GPU-seconds for the share of its GPUs' memory it keeps. Requests join a sleeping
engine of their model (waking it) after warm and starting instances: before any new
start, unless the policy weighs wakes against starts (`Policy.weighs_wakes`).
"""

from collections.abc import Callable
from itertools import islice

from policies.base import Sleeping
from sim.model.clock import Clock, Timer
from sim.model.cluster import Cluster
from sim.model.instance import SLEEPING, STOPPED, Instance
from sim.model.loading import CheckpointLoad
from sim.model.per_model import PerModel
from sim.model.server import Server
from sim.model.startup import Startup
from sim.spec import ClusterConfig
from thaw_kernel.stages import FIXED, LOAD, Stage
from thaw_kernel.tiers import Tier

RELOAD = ((Stage("load", LOAD),),)  # a level-2 wake: the load alone
PROBES = 16  # sleeping engines of a model tried per request


class Sleepers:
    def __init__(self, config: ClusterConfig, cluster: Cluster, clock: Clock, sleep_s: float):
        self._config = config
        self._cluster = cluster
        self._clock = clock
        self.sleep_s = sleep_s
        self.asleep: PerModel[dict[Instance, Timer]] = PerModel(lambda _: {})
        self.wakes = {1: 0, 2: 0}
        self.gpu_seconds = 0.0  # the memory share of their GPUs the sleeping engines kept
        # Per GPU of each group, the memory sleeping engines may keep.
        self.room = [
            group.gpu_memory
            - max(
                (
                    -(-m.weights // m.gpus)  # per GPU, rounded up
                    for m in config.models.values()
                    if group.can_host(m.gpus, m.weights)
                ),
                default=0,
            )
            for group in config.servers
        ]

    def _level(self, instance: Instance) -> int:
        spec = self._config.sleep_of(instance.model.name)
        return 0 if spec is None else spec.level

    def kept(self, instance: Instance) -> int:
        """The GPU memory `instance` keeps asleep, over all its GPUs."""
        spec = self._config.sleep_of(instance.model.name)
        return 0 if spec is None else spec.gpu_memory * instance.model.gpus

    def _fits(self, instance: Instance, memory: int, dram: int) -> bool:
        """Whether idle `instance` could sleep on its server beside `memory` bytes of GPU
        memory kept asleep there, `dram` bytes reservable in its DRAM (`try_sleep`'s test,
        which `wake_s` replays on the swap to come)."""
        spec = self._config.sleep_of(instance.model.name)
        if spec is None or not self.sleep_s:
            return False
        server = self._cluster.servers[instance.server]
        kept, room = spec.gpu_memory * instance.model.gpus, self.room[server.group_index]
        if spec.gpu_memory > room or memory + kept > server.gpus * room:
            return False
        return spec.level == 2 or instance.model.weights <= dram

    def try_sleep(self, instance: Instance) -> bool:
        """Put an idle instance to sleep if its model sleeps and its server has the room;
        False, changing nothing, if not."""
        server = self._cluster.servers[instance.server]
        if not self._fits(instance, server.sleep_memory, server.dram.reservable()):
            return False
        if self._level(instance) == 1:
            server.dram.reserve(instance.model.weights)  # it fits: `_fits` said so
        self._cluster.mark_busy(instance)
        instance.stop(SLEEPING)
        self._cluster.retire(instance, "asleep")
        server.sleeping[instance] = self._clock.now
        server.sleep_memory += self.kept(instance)
        timer = self._clock.call_in(self.sleep_s, self._end, instance, "expired")
        self.asleep[instance.model.name][instance] = timer
        return True

    def offers(self, model: str, can_start: Callable[[int, str], bool]) -> list[Sleeping]:
        """`ClusterView.sleeping`: among the oldest `PROBES` engines of `model` asleep, the
        oldest on each server that can take it now (`can_start`; the others there would
        wake alike), each with its `wake_s`."""
        offers: dict[int, Sleeping] = {}
        for instance in islice(self.asleep[model], PROBES):
            if instance.server not in offers and can_start(instance.server, model):
                wake_s = self.wake_s(instance)
                offers[instance.server] = Sleeping(instance.server, instance.id, wake_s)
        return list(offers.values())

    def engine(self, model: str, server: int, instance_id: int) -> Instance | None:
        """The engine of `model` asleep on `server` with that id, if any."""
        for instance in self.asleep[model]:
            if instance.id == instance_id and instance.server == server:
                return instance
        return None

    def wake_for(
        self, model: str, can_start: Callable[[int, str], bool]
    ) -> tuple[Instance, float] | None:
        """For a policy that does not weigh wakes: wake the oldest of the first `PROBES`
        engines of `model` asleep whose server can take it now; it, and its `wake_s`."""
        for instance in islice(self.asleep[model], PROBES):
            if can_start(instance.server, model):
                return instance, self.wake(instance)
        return None

    def wake_s(self, instance: Instance) -> float:
        """Seconds until `instance`, woken now, would be ready, changing nothing: the swap
        that `wake` would make, replayed (the same victims, in the keep-alive's order, the
        same test of which can sleep), then the copy or the reload. The reload is priced as
        `startup-aware` prices a load (exact if no other load begins meanwhile); the rest
        is exact."""
        server, model = self._cluster.servers[instance.server], instance.model
        level = self._level(instance)
        # As after `wake` ends its sleep and pins its reload's source (a level-1 engine's
        # weights stay reserved until its copy ends: the swap cannot take their room).
        memory = server.sleep_memory - self.kept(instance)
        dram = server.dram.reservable(model.name if level == 2 else "")
        free, swap_s = server.free_gpus, 0.0
        for victim in self._cluster.reclaim_order(server):
            if free >= model.gpus:
                break
            free += victim.model.gpus
            if self._fits(victim, memory, dram):
                memory += self.kept(victim)
                if self._level(victim) == 1:
                    dram -= victim.model.weights
                    swap_s += self._copy_s(victim)
        if level == 1:
            return swap_s + self._copy_s(instance)
        return swap_s + self._cluster.tier_load_s(server.id, model.name, swap_s)

    def wake(self, instance: Instance) -> float:
        """Wake a sleeping engine whose server can take it now; its `wake_s`, priced
        before it acts."""
        estimate = self.wake_s(instance)
        self.asleep[instance.model.name].pop(instance).cancel()
        self._end(instance, "woken")
        level = self._level(instance)
        server, model = self._cluster.servers[instance.server], instance.model
        # A reload pins its source now, as a start's load does at its decision: the swap's
        # DRAM reservations cannot evict it.
        load = CheckpointLoad(server, model, model.gpus) if level == 2 else None
        swap_s = self._swap(server, model.gpus)
        self._cluster.place(instance)
        instance.wake()
        self.wakes[level] += 1
        if load is None:
            instance.tier = Tier.DRAM
            server.copying.add(instance)

            def copied() -> None:
                server.copying.discard(instance)
                server.dram.release(model.weights)
                instance.ready()

            self._clock.call_in(swap_s + self._copy_s(instance), copied)
        else:
            instance.tier = load.tier
            steps = ((Stage("swap", FIXED, swap_s),), *RELOAD) if swap_s else RELOAD

            def reloaded(load: CheckpointLoad = load) -> None:
                instance.load_s, instance.download_s = load.durations()
                instance.ready()

            Startup(self._clock, server, load, steps, reloaded).begin()
        return estimate

    def _copy_s(self, instance: Instance) -> float:
        """A level-1 engine's weights crossing its own PCIe lanes, either way."""
        return instance.model.pcie_s(self._cluster.servers[instance.server].group.pcie)

    def _swap(self, server: Server, gpus: int) -> float:
        """Put idle instances of `server` to sleep, oldest idle first, while a wake lacks
        free GPUs and they can sleep: seconds until their weights are off the GPUs (level
        1 copies them to DRAM; level 2 discards them at once). Those that cannot sleep the
        wake stops as a start does."""
        swap_s = 0.0
        while server.free_gpus < gpus and server.idle:
            victim = self._cluster.victim(server)  # its keep-alive timer ends with it
            if not self.try_sleep(victim):
                self._cluster.stop(victim, "reclaimed")
            elif self._level(victim) == 1:
                swap_s += self._copy_s(victim)
        return swap_s

    def _end(self, instance: Instance, why: str) -> None:
        """`instance`'s sleep ends: it wakes, or it stops (`expired`, or `running` when a
        run is cut short)."""
        if why != "woken":
            del self.asleep[instance.model.name][instance]
        server = self._cluster.servers[instance.server]
        since = server.sleeping.pop(instance)
        kept = self.kept(instance)
        server.sleep_memory -= kept
        if self._level(instance) == 1 and why != "woken":  # a wake's copy releases it
            server.dram.release(instance.model.weights)
        share = kept / server.group.gpu_memory * (self._clock.now - since)
        self.gpu_seconds += share
        self._cluster.gpu_seconds += share
        self._cluster.log.slept(instance, since, self._clock.now, why)
        if why != "woken":
            instance.state = STOPPED

    def cut_short(self) -> None:
        """A time limit ends the run: charge and log the engines still asleep."""
        for model in self._config.models:  # in the catalog's order, as before the cut
            for instance, timer in list(self.asleep.get(model, {}).items()):
                timer.cancel()
                self._end(instance, "running")
