"""The replay's start-up, timed alone around each replay, for the simulator's profile.

`calibration.measure` times a generic start-up (a process importing torch) within a few
seconds; a validation replays for minutes, and its instances are processes of its own
engine (`calibration.validate.instance_process`), which imports thaw's loader and model code
besides torch. On a shared or virtual machine the same start-up's CPU-seconds drift by a
quarter from one minute to the next, and a start-up is nearly all of a cold TTFT here, so
a profile caught in a fast or slow spell would pass for the simulator's error. Before the
first replay and after each one, the replay's engine is therefore started `PROBES` times
alone, nothing else running, and timed from its spawn to its word that it has started
(the replay's `runtime_start` stage; it is then stopped, or in the `tiers` scenario first
times a load, below); each replay is simulated with
the profile's start-up (its wall time and CPU-seconds) replaced by the median of the
probes just before and just after it. That is a measurement of the engine on this machine
in that replay's minutes, still nothing the replay itself measured: how start-ups that
overlap stretch, and everything after the start-up, the simulator works out. The report
keeps the errors with the profile's own start-up beside them.

Where the checkpoints are gigabytes (the `tiers` scenario), the disk is re-probed the
same way: this VM's one-reader cold rate, which the profile measures in its own minute,
was 1.30 to 2.3 GB/s from one validation to the next (a cache behind the virtual disk
serves part of a "cold" read, more on some days than others). Each probing instance,
once started, loads a checkpoint found on server 0's SSD cold into a DRAM cache
directory, as the replay's loads from SSD do, timed until its bytes are in host memory
(its `read`, before any copy to a GPU, which the simulator prices apart); the replay is
simulated with `ssd_read_bytes_per_s` the median of the loads just before and just after
it, the host's disk scaled by the same factor (the disk faster or slower as a whole),
and `load_cpu_s_per_byte` the CPU-seconds those loads spent per byte (as the profile's
reader processes spend, `python benchmarks/load_pairs.py`, but in the replay's minutes).
Where two servers hold checkpoints, two instances then load one from each server's SSD,
told to begin together once both have started, `PROBES` times, as two of the replay's
loads do: how the disk divides between them changed from one quarter-hour to the next on
this VM too, so the replay is simulated with the median of those pairs as
`host_disk_shared_bytes_per_s`, the disk's rate while two or more transfers cross it,
and `host_disk_bytes_per_s` the one load's (`sim.model.transfers.ServerLinks`,
`shared`).
"""

import json
import math
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from calibration.checkpoint.format import BLOB_NAME, payload_bytes
from calibration.checkpoint.pagecache import make_cold
from calibration.measure.measurement import Measurement
from calibration.validate.scenario import MODELS, Layout, Scenario
from calibration.validate.scheduler import instance_command, instance_spec

PROBES = 3
MEASUREMENT = "instance_startup_around_replay"
DISK_MEASUREMENT = "disk_read_around_replay"
PAIR_MEASUREMENT = "disk_pair_read_around_replay"
LOAD_CPU_MEASUREMENT = "load_cpu_around_replay"


@dataclass(frozen=True)
class Probe:
    """One probe's start-ups, wall times and CPU-seconds in s; its cold loads of a
    checkpoint on disk (bytes/s, and CPU-seconds per byte) and its pairs of cold loads at
    once (the disk's rate while both read, `shared_rate`, bytes/s); no loads where the
    scenario's are not gigabytes."""

    wall_s: tuple[float, ...]
    cpu_s: tuple[float, ...]
    disk_bytes_per_s: tuple[float, ...] = ()
    disk_pair_bytes_per_s: tuple[float, ...] = ()
    load_cpu_s_per_byte: tuple[float, ...] = ()

    @property
    def median_s(self) -> float:
        return statistics.median(self.wall_s)


def probe(scenario: Scenario, layout: Layout) -> Probe:
    """Start an instance on server 0 `PROBES` times, one at a time, and time each start-up
    (of any model: the start-up comes before the checkpoint is read); in the `tiers`
    scenario, each of them then loads the checkpoint on server 0's SSD cold, and pairs of
    instances, on servers 0 and 1, load theirs at once, `PROBES` times."""
    if not scenario.checkpoint_bytes:
        model = next(iter(MODELS))
        spec = instance_spec(scenario, 0, model, layout.ssd(0, model), None)
        samples = [_start(spec) for _ in range(PROBES)]
        return Probe(tuple(w for w, _ in samples), tuple(c for _, c in samples))
    first, second = _held(layout, 0), _held(layout, 1)
    if first is None:
        raise RuntimeError("the disk probe found no checkpoint on server 0's SSD")
    alone = [timed_loads(scenario, layout, [(0, first)])[0] for _ in range(PROBES)]
    pairs = ()
    if second is not None:
        pairs = tuple(
            shared_rate(timed_loads(scenario, layout, [(0, first), (1, second)]))
            for _ in range(PROBES)
        )
    return Probe(
        wall_s=tuple(load.startup_s for load in alone),
        cpu_s=tuple(load.startup_cpu_s for load in alone),
        disk_bytes_per_s=tuple(load.bytes / load.load_s for load in alone),
        disk_pair_bytes_per_s=pairs,
        load_cpu_s_per_byte=tuple(load.load_cpu_s / load.bytes for load in alone),
    )


def _held(layout: Layout, server: int) -> Path | None:
    """The first checkpoint, in catalog order, on `server`'s SSD (None: none, or no such
    server)."""
    for model in MODELS:
        if (layout.ssd(server, model) / BLOB_NAME).exists():
            return layout.ssd(server, model)
    return None


@dataclass(frozen=True)
class Load:
    """One probing instance: its start-up (wall and CPU seconds), then its load from SSD
    (wall seconds to its bytes in host memory from the word to load, or from the end of
    its download where it first downloaded the checkpoint; CPU-seconds since it started,
    a download's included; tensor bytes), and its download's seconds from the word (NaN:
    none)."""

    startup_s: float
    startup_cpu_s: float
    load_s: float
    load_cpu_s: float
    bytes: int
    download_s: float = math.nan


def timed_loads(
    scenario: Scenario,
    layout: Layout,
    held: list[tuple[int, Path]],
    downloads: Sequence[dict | None] = (),
    beside: Callable[[], None] | None = None,
) -> list[Load]:
    """For each (server, checkpoint) of `held`, an instance of the replay's engine that,
    once all have started, loads the checkpoint cold from that server's SSD into a DRAM
    cache directory, as the replay's loads from SSD do; all told to load at once. Where
    `downloads` gives the k-th a download (`instance_process.Spec.download`), it first
    downloads the checkpoint to that path, as a replay's start from the remote store does.
    `beside`: called once all are told, the company they load in (a benchmark's)."""
    fetch = list(downloads) + [None] * (len(held) - len(downloads))
    scratch = Path(tempfile.mkdtemp(prefix="probe-", dir=layout.dram))
    children: list[subprocess.Popen] = []
    try:
        spawned: list[float] = []
        for k, ((server, checkpoint), download) in enumerate(zip(held, fetch, strict=True)):
            spec = instance_spec(
                scenario, server, checkpoint.name, checkpoint, scratch / str(k), download
            )
            spawned.append(time.monotonic())  # the clock the instance stamps its events with
            children.append(_spawn(spec | {"hold": True}, scratch / f"{k}.err"))
        started = [
            _event(child, "started", scratch / f"{k}.err") for k, child in enumerate(children)
        ]
        for (_, checkpoint), download in zip(held, fetch, strict=True):
            if download is None:
                make_cold(str(checkpoint / BLOB_NAME))
        for k, child in enumerate(children):
            _tell(child, scratch / f"{k}.err")
        begun = time.monotonic()
        if beside is not None:
            beside()
        downloaded = [
            begun if download is None else _event(child, "downloaded", scratch / f"{k}.err")["t"]
            for k, (child, download) in enumerate(zip(children, fetch, strict=True))
        ]
        read = [_event(child, "read", scratch / f"{k}.err") for k, child in enumerate(children)]
    finally:
        for child in children:
            child.kill()
            child.communicate()
        shutil.rmtree(scratch, ignore_errors=True)
    return [
        Load(
            startup_s=start["t"] - spawn,
            startup_cpu_s=float(start["cpu_s"]),
            load_s=end["t"] - fetched,
            load_cpu_s=float(end["cpu_s"]) - float(start["cpu_s"]),
            bytes=payload_bytes(checkpoint),
            download_s=math.nan if download is None else fetched - begun,
        )
        for spawn, start, fetched, end, (_, checkpoint), download in zip(
            spawned, started, downloaded, read, held, fetch, strict=True
        )
    ]


def shared_rate(loads: list[Load]) -> float:
    """The disk's rate while all of `loads` read: what the first to finish read over its
    time, times their number (the disk shared equally, as the simulator shares it; the
    others' ends, read with fewer beside them, are left out: the checkpoints need not be
    of one size)."""
    first = min(loads, key=lambda load: load.load_s)
    return len(loads) * first.bytes / first.load_s


def _spawn(spec: dict, errors: Path) -> subprocess.Popen:
    with open(errors, "w") as stderr:
        return subprocess.Popen(
            instance_command(spec),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )


def _tell(child: subprocess.Popen, errors: Path) -> None:
    """Tell a held `child` to load."""
    try:
        child.stdin.write("load\n")
        child.stdin.flush()
    except BrokenPipeError:
        _failed(errors)


def _event(child: subprocess.Popen, name: str, errors: Path) -> dict:
    """The next event `child` says, which must be `name`."""
    try:
        event = json.loads(child.stdout.readline())
    except ValueError:
        event = None
    if not isinstance(event, dict) or event.get("event") != name:
        _failed(errors)
    return event


def _failed(errors: Path) -> NoReturn:
    last = (errors.read_text().strip().splitlines() or ["no output"])[-1]
    raise RuntimeError(f"the engine's disk probe failed: {last}")


def _start(spec: dict) -> tuple[float, float]:
    """Seconds from spawning the instance to its `started`, and its CPU-seconds then."""
    spawned = time.monotonic()  # the clock the instance stamps its events with
    with subprocess.Popen(
        instance_command(spec),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as child:
        line = child.stdout.readline()
        child.kill()
        _, errors = child.communicate()
    try:
        event = json.loads(line)
    except ValueError:
        event = {}
    if event.get("event") != "started":
        last = (errors.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"the engine's start-up probe failed: {last}")
    return event["t"] - spawned, float(event["cpu_s"])


def reprobed(profile: Path, before: Probe, after: Probe, out: Path) -> Path:
    """Write to `out` the profile at `profile` with its start-up replaced by the median of
    the probes `before` and `after` a replay (the CPU-seconds, where the profile has them,
    by theirs, at most the wall time as `calibration.measure` records them), and where
    both read the disk, its one-reader rate by theirs (the host's disk scaled alike) and,
    where the profile prices a load's CPU, that by theirs; where both read it in pairs too,
    the host's disk one reader's rate and its shared rate the pairs'."""
    document = json.loads(profile.read_text(encoding="utf-8-sig"))
    derived = document["derived"]
    measurements = document.setdefault("measurements", {})
    wall = Measurement(before.wall_s + after.wall_s, "s", True)
    derived["instance_startup_s"] = wall.median
    if "startup_cpu_s" in derived:
        cpu = statistics.median(before.cpu_s + after.cpu_s)
        derived["startup_cpu_s"] = min(cpu, wall.median)
    measurements[MEASUREMENT] = wall.record()
    if before.disk_bytes_per_s and after.disk_bytes_per_s:
        disk = Measurement(before.disk_bytes_per_s + after.disk_bytes_per_s, "bytes/s", False)
        factor = disk.median / derived["ssd_read_bytes_per_s"]
        derived["ssd_read_bytes_per_s"] = disk.median
        if "host_disk_bytes_per_s" in derived:
            derived["host_disk_bytes_per_s"] *= factor
        measurements[DISK_MEASUREMENT] = disk.record()
    if before.disk_pair_bytes_per_s and after.disk_pair_bytes_per_s:
        pairs = before.disk_pair_bytes_per_s + after.disk_pair_bytes_per_s
        pair = Measurement(pairs, "bytes/s", False)
        measurements[PAIR_MEASUREMENT] = pair.record()
        if document.get("version", 1) >= 2:  # a host's disk is a version-2 key
            derived["host_disk_bytes_per_s"] = derived["ssd_read_bytes_per_s"]  # one stream
            derived["host_disk_shared_bytes_per_s"] = pair.median
    if before.load_cpu_s_per_byte and after.load_cpu_s_per_byte:
        cpu_per_byte = before.load_cpu_s_per_byte + after.load_cpu_s_per_byte
        load_cpu = Measurement(cpu_per_byte, "s/byte", False)
        measurements[LOAD_CPU_MEASUREMENT] = load_cpu.record()
        if "load_cpu_s_per_byte" in derived:
            derived["load_cpu_s_per_byte"] = load_cpu.median
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(document, indent=2) + "\n")
    return out
