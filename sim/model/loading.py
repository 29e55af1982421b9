"""A checkpoint load onto a new instance's GPUs, from the fastest tier that holds it.

The source entry is pinned from the decision until the load ends, so eviction cannot pull
it away mid-read. The load is pipelined through every link between its tier and the
GPUs: DRAM -> GPU over the instance's own PCIe lanes (never shared: a GPU belongs to one
instance), SSD -> DRAM -> GPU adding the server's SSD (and the host's disk, when a host's
servers share one: `Server.paths`), remote -> DRAM -> GPU adding the server's network
link. When it ends, the checkpoint is installed in the faster caches it passed through:
DRAM for an SSD load, SSD and DRAM for a remote one (space permitting).

With `remote_download` a remote start is two phases, as in ServerlessLLM: the checkpoint
is downloaded over the network link into the server's SSD (its writes crossing the host's
disk, if shared), admitted there (least recently used out; if it cannot be, the load still
reads the downloaded copy, which is then dropped) and pinned, then loaded from the SSD
exactly as an SSD start is. The instance's tier stays remote.

Where the servers' group gives its loads a CPU cost (`load_cpu_s_per_gb` for a load
from SSD, `download_cpu_s_per_gb` for a download or a load streamed from the remote
tier), each phase also runs a flow of that many CPU-seconds on the host's cores, as the
page faults, copies and checksums of a real load take them; the phase ends when its
bytes and its CPU work are both done. The CPU flow keeps pace with the bytes: its cap is
its CPU per byte times the bytes' rate of the moment (the phase's solo rate alone, so
that alone it never lengthens the phase; less while a shared link slows the bytes), and
once the bytes are in, what CPU work is left runs at the solo pace. The host's cores go to
its CPU flows in proportion to what each asks (`sim.model.server.host_cores`): where
the flows ask for more than the cores, each gets its cap times the cores over the sum of
the caps. Start-ups' stages ask one core each, so among themselves this is the max-min
share; a load asks as many cores as its pace takes, and the kernel's scheduler, sharing
a core among runnable threads, gives a load's several threads more than a one-threaded
start-up beside it, and slows both: on the project's VM a load from SSD beside a start-up
ran at 76% of its rate alone, and the start-up took 1.46x its time alone
(docs/calibration.md), where max-min would leave the start-up its core and serving loads
first would leave the load its rate.
"""

import math
from collections.abc import Callable

from sim.model.server import CORES, Server
from sim.model.transfers import ServerLinks, Transfer
from sim.spec import ModelSpec
from thaw_kernel.tiers import Tier

Phase = tuple[float, tuple[str, ...], float]  # (bytes, links crossed, own cap)


def fastest_tier(server: Server, model: str) -> Tier:
    if model in server.dram:
        return Tier.DRAM
    if model in server.ssd:
        return Tier.SSD
    return Tier.REMOTE


def load_phases(
    server: Server, model: ModelSpec, tier: Tier, to_host: bool = False
) -> tuple[Phase, ...]:
    """The flows a load of `model` from `tier` onto `server` runs, one after the other:
    what the model runs (`CheckpointLoad`) and the estimates price (`Cluster.tier_load_s`).
    `to_host`: into host memory only, for an engine that copies the weights onto its GPUs
    itself (a `copy` stage): not through the PCIe lanes, and from DRAM, nothing."""
    if to_host and tier == Tier.DRAM:
        return ()
    cap = math.inf if to_host else model.gpus * server.group.pcie
    if tier == Tier.REMOTE and server.download:
        download = (float(model.weights), server.download_path, math.inf)
        return download, (float(model.weights), server.paths[Tier.SSD], cap)
    return ((float(model.weights), server.paths[tier], cap),)


def cpu_phases(
    server: Server, model: ModelSpec, tier: Tier, phases: tuple[Phase, ...]
) -> tuple[Phase | None, ...]:
    """Beside each of the load's `phases` (`load_phases`), its CPU work on the host's cores
    as a flow (CPU-seconds, `CORES`, cap at the phase's solo pace), or None where it
    takes none."""
    group, gb = server.group, model.weights / 1e9
    if not (group.load_cpu_s_per_gb or group.download_cpu_s_per_gb):
        return (None,) * len(phases)  # loads take no CPU: nothing to build
    per_gb = {Tier.DRAM: 0.0, Tier.SSD: group.load_cpu_s_per_gb}
    remote = [group.download_cpu_s_per_gb] + [group.load_cpu_s_per_gb] * server.download
    costs = [per_gb[tier]] if tier in per_gb else remote
    return tuple(
        _cpu_flow(server, phase, cost * gb) for phase, cost in zip(phases, costs, strict=True)
    )


def _cpu_flow(server: Server, phase: Phase, work: float) -> Phase | None:
    """`work` CPU-seconds capped at the rate that, alone, ends with the phase's bytes."""
    if work <= 0:
        return None
    size, links, cap = phase
    solo = min([cap, *(server.links.capacity[link] for link in links)])
    return (work, CORES, work * solo / size)


class CheckpointLoad:
    def __init__(self, server: Server, model: ModelSpec, gpus: int, to_host: bool = False) -> None:
        """`to_host`: the load reads into host memory, and the engine's `copy` stage
        moves the weights onto its GPUs (`load_phases`)."""
        self.server = server
        self.model = model
        self.tier = fastest_tier(server, model.name)
        self.cap = gpus * server.group.pcie
        self.to_host = to_host
        # Its (time, fraction loaded) points, recorded when a prefill pipelines behind it;
        # it reads the weights in order, from the first layer.
        self.progress: list[tuple[float, float]] | None = None
        self.offset = 0.0
        # When it began, its download ended (if it had one) and it ended (the instance log).
        self.began_at = self.downloaded_at = self.ended_at = math.nan
        self._staged = False  # its downloaded copy was admitted to the SSD (and pinned)
        if self.tier != Tier.REMOTE:
            source = server.cache(self.tier)
            source.touch(model.name)
            source.pin(model.name)
            server.reading[self.tier, model.name] += 1

    def durations(self) -> tuple[float, float]:
        """Seconds from its start to its end, and of them the download's (NaN if none)."""
        return self.ended_at - self.began_at, self.downloaded_at - self.began_at

    @property
    def links(self) -> tuple[str, ...]:
        return self.server.paths[self.tier]

    @property
    def copy_s(self) -> float:
        """Seconds the engine's copy of the weights from host memory onto its GPUs takes:
        over its own PCIe lanes, which no other instance shares."""
        return self.model.pcie_s(self.server.group.pcie)

    def start_in(self, delay: float, on_done: Callable[[], None]) -> None:
        """Begin the load after `delay` (the instance start-up); `on_done` when it ends."""
        self.began_at = self.server.links.now + delay
        phases = load_phases(self.server, self.model, self.tier, self.to_host)
        if not phases:  # already where it is read from: the engine's copy takes it
            self.server.links.call_in(delay, lambda: self._end(on_done))
            return
        cpu = cpu_phases(self.server, self.model, self.tier, phases)
        self._phase(0, delay, phases, cpu, on_done)

    def _end(self, on_done: Callable[[], None]) -> None:
        self.ended_at = self.server.links.now
        if self.progress and self.progress[-1][0] < self.ended_at:
            # Its CPU work outlasted its bytes: the weights are usable once it ends.
            self.progress.append((self.ended_at, 1.0))
        self._install()
        on_done()

    def _phase(
        self,
        k: int,
        delay: float,
        phases: tuple[Phase, ...],
        cpu: tuple[Phase | None, ...],
        on_done: Callable[[], None],
    ) -> None:
        """Run phase `k` (in `delay` seconds: only the first phase waits), then the next,
        or end the load."""
        links, cores = self.server.links, self.server.cores
        last = k == len(phases) - 1
        parts = [1 + (cpu[k] is not None)]  # the bytes, and the CPU work if any

        def part_done() -> None:
            parts[0] -= 1
            if parts[0]:
                return
            if last:
                self._end(on_done)
            else:
                self.downloaded_at = links.now
                self._stage()
                self._phase(k + 1, 0.0, phases, cpu, on_done)

        progress = self.progress if last else None
        work = cpu[k]
        if work is None:
            if k == 0:
                links.start_in(delay, *phases[k], part_done, progress, then=phases[k + 1 :])
            else:
                links.start(*phases[k], part_done, progress)
            return
        # The CPU flow begins first, so that the bytes' first rate already paces it.
        paced = _PacedCpu(cores, work[0] / phases[k][0], work[2], part_done)
        if k == 0:
            cores.start_in(delay, *work, paced.cpu_done, started=paced.begun)
            then = phases[k + 1 :]
            links.start_in(delay, *phases[k], paced.bytes_done, progress, then, paced.pace)
        else:
            paced.begun(cores.start(*work, paced.cpu_done))
            links.start(*phases[k], paced.bytes_done, progress, on_rate=paced.pace)

    def _stage(self) -> None:
        """The download is on the SSD: admit it there if it fits, pinned while it is read."""
        name = self.model.name
        if self.server.ssd.admit(name, self.model.weights):
            self._staged = True
            self.server.ssd.pin(name)
            self.server.reading[Tier.SSD, name] += 1

    def _install(self) -> None:
        name, size = self.model.name, self.model.weights
        if self.tier != Tier.REMOTE:
            self.server.cache(self.tier).unpin(name)
            self.server.reading[self.tier, name] -= 1
        elif self._staged:
            self.server.ssd.unpin(name)
            self.server.reading[Tier.SSD, name] -= 1
        elif not self.server.download:  # streamed: installed in passing, space permitting
            self.server.ssd.admit(name, size)
        else:  # downloaded but never admitted: the copy read once is deleted
            self.server.delete_from_ssd(size)
        self.server.dram.admit(name, size)


class _PacedCpu:
    """A phase's CPU work on the host's cores, keeping pace with its bytes."""

    __slots__ = ("_cores", "_done", "_flow", "_per_byte", "_solo_cap")

    def __init__(
        self, cores: ServerLinks, per_byte: float, solo_cap: float, done: Callable[[], None]
    ) -> None:
        self._cores = cores
        self._per_byte = per_byte  # CPU-seconds per byte
        self._solo_cap = solo_cap
        self._done = done  # the phase's: told once for the bytes, once for the CPU
        self._flow: Transfer | None = None  # once begun, until done

    def begun(self, flow: Transfer) -> None:
        self._flow = flow

    def pace(self, bytes_per_s: float) -> None:
        """The bytes' new rate: the CPU work's cap follows it."""
        if self._flow is not None:
            self._cores.reroute(self._flow, self._flow.links, self._per_byte * bytes_per_s)

    def bytes_done(self) -> None:
        """The bytes are in: the CPU work left, if any, runs at the solo pace."""
        self.pace(self._solo_cap / self._per_byte)
        self._done()

    def cpu_done(self) -> None:
        self._flow = None
        self._done()
