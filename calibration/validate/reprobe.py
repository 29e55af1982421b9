"""The replay's start-up, timed alone around each replay, for the simulator's profile.

`calibration.measure` times a generic start-up (a process importing torch) within a few
seconds; a validation replays for minutes, and its instances are processes of its own
engine (`calibration.validate.instance_process`), which imports thaw's loader and model code
besides torch. On a shared or virtual machine the same start-up's CPU-seconds drift by a
quarter from one minute to the next, and a start-up is nearly all of a cold TTFT here, so
a profile caught in a fast or slow spell would pass for the simulator's error. Before the
first replay and after each one, the replay's engine is therefore started `PROBES` times
alone, nothing else running, and timed from its spawn to its word that it has started
(the replay's `runtime_start` stage; it is then stopped); each replay is simulated with
the profile's start-up (its wall time and CPU-seconds) replaced by the median of the
probes just before and just after it. That is a measurement of the engine on this machine
in that replay's minutes, still nothing the replay itself measured: how start-ups that
overlap stretch, and everything after the start-up, the simulator works out. The report
keeps the errors with the profile's own start-up beside them.

Where the checkpoints are gigabytes (the `tiers` scenario), the disk is re-probed the
same way: this VM's one-reader cold rate, which the profile measures in its own minute,
was 1.30 to 2.3 GB/s from one validation to the next (a cache behind the virtual disk
serves part of a "cold" read, more on some days than others). Around each replay a
reader process loads a checkpoint found on server 0's SSD cold, `PROBES` times, as the
profile's `disk_readers_1` does; the replay is simulated with `ssd_read_bytes_per_s` the
median of the reads just before and just after it, and the host's disk scaled by the
same factor (the disk faster or slower as a whole). Where two servers hold checkpoints,
two reader processes then load one from each server's SSD at once, `PROBES` times, as
two of the replay's loads do: how the disk divides between them changed from one
quarter-hour to the next on this VM too (two readers together at 1.36 times one reader's
rate in a profile; two of the replay's engines at once, ten minutes after that run, at
about 0.8 times one alone; docs/calibration.md), so the replay is simulated with the
median of those pairs as `host_disk_shared_bytes_per_s`, the disk's rate while two or
more transfers cross it, and `host_disk_bytes_per_s` the one reader's
(`sim.model.transfers.ServerLinks`, `shared`).
"""

import json
import statistics
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from calibration.checkpoint.format import BLOB_NAME, payload_bytes
from calibration.checkpoint.pagecache import make_cold
from calibration.checkpoint.reader import buffer_bytes
from calibration.measure.disk_readers import LOAD_COMMAND, Readers
from calibration.measure.measurement import Measurement
from calibration.validate.scenario import MODELS, Layout, Scenario
from calibration.validate.scheduler import instance_command, instance_spec

PROBES = 3
MEASUREMENT = "instance_startup_around_replay"
DISK_MEASUREMENT = "disk_read_around_replay"
PAIR_MEASUREMENT = "disk_pair_read_around_replay"


@dataclass(frozen=True)
class Probe:
    """One probe's start-ups, wall times and CPU-seconds in s, its cold reads of a
    checkpoint on disk and its pairs of cold reads at once (the disk's rate while both
    read, `_cold_reads`) in bytes/s (none where the scenario's loads are not gigabytes)."""

    wall_s: tuple[float, ...]
    cpu_s: tuple[float, ...]
    disk_bytes_per_s: tuple[float, ...] = ()
    disk_pair_bytes_per_s: tuple[float, ...] = ()

    @property
    def median_s(self) -> float:
        return statistics.median(self.wall_s)


def probe(scenario: Scenario, layout: Layout) -> Probe:
    """Start an instance on server 0 `PROBES` times, one at a time, and time each start-up
    (of any model: the start-up comes before the checkpoint is read); in the `tiers`
    scenario, then read a checkpoint on server 0's SSD cold `PROBES` times."""
    model = next(iter(MODELS))
    spec = instance_spec(scenario, 0, model, layout.ssd(0, model), None)
    samples = [_start(spec) for _ in range(PROBES)]
    disk = pairs = ()
    if scenario.checkpoint_bytes:
        first, second = _held(layout, 0), _held(layout, 1)
        if first is None:
            raise RuntimeError("the disk probe found no checkpoint on server 0's SSD")
        disk = _cold_reads([first])
        if second is not None:
            pairs = _cold_reads([first, second])
    wall, cpu = tuple(w for w, _ in samples), tuple(c for _, c in samples)
    return Probe(wall, cpu, disk, pairs)


def _held(layout: Layout, server: int) -> Path | None:
    """The first checkpoint, in catalog order, on `server`'s SSD (None: none, or no such
    server)."""
    for model in MODELS:
        if (layout.ssd(server, model) / BLOB_NAME).exists():
            return layout.ssd(server, model)
    return None


def _cold_reads(checkpoints: list[Path]) -> tuple[float, ...]:
    """`checkpoints` loaded cold at once, a reader process each, `PROBES` times, as the
    profile's `disk_readers_K` load. Each time, the disk's rate while all of them read:
    what the first reader to finish read over its time, times their number (the disk
    shared equally, as the simulator shares it; the others' ends, read with fewer
    beside them, are left out: the checkpoints need not be of one size)."""
    payloads = [payload_bytes(checkpoint) for checkpoint in checkpoints]
    rates = []
    size = max(buffer_bytes(checkpoint) for checkpoint in checkpoints)
    with Readers(len(checkpoints), size) as readers:
        for _ in range(PROBES):
            for checkpoint in checkpoints:
                make_cold(str(checkpoint / BLOB_NAME))
            stamps = readers.stamps(LOAD_COMMAND, checkpoints)
            first = min(range(len(stamps)), key=lambda k: stamps[k][1])
            start, end, _ = stamps[first]
            rates.append(len(checkpoints) * payloads[first] / (end - start))
    return tuple(rates)


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
    both read the disk, its one-reader rate by theirs (the host's disk scaled alike); where
    both read it in pairs too, the host's disk one reader's rate and its shared rate the
    pairs'."""
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
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(document, indent=2) + "\n")
    return out
