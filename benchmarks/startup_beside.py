"""What slows an instance's start-up on a small host: another process's CPU, its memory
traffic, or a checkpoint load?

    python benchmarks/startup_beside.py --dir DIR [--size 1GB] [--runs 6]
        [--remote-rate 300MB/s] [--json]

Times `calibration.measure`'s start-up probe (a fresh process importing torch, from its
spawn to its word that it is ready) alone and beside one other process of each kind:

- `spin`: a Python loop that keeps one core busy and touches no memory to speak of;
- `copy`: numpy copying a 256 MiB array into another, again and again (memory traffic);
- `fault`: mapping 256 MiB of fresh anonymous memory, touching each page, unmapping it
  (page faults, as a load into fresh memory takes);
- `load`: `calibration.measure`'s disk reader loading a cold copy of a `--size`
  checkpoint written in DIR again and again (evicted before each load), as
  `instance_startup_beside_load` does;
- `download`: the real client downloading that checkpoint again and again through the
  store (`calibration.remote`) paced at `--remote-rate`, into an O_DIRECT file in DIR,
  as a replay's cold start from the remote tier does (the other column: the client's
  and the store's cores).

The kinds take turns, `--runs` rounds. For each kind it prints the start-up's median wall
time, its ratio to the start-up alone, its median CPU-seconds (its own clock) and
involuntary context switches (how often the kernel took its core away), and the other
process's CPU rate in cores (for `load`: the machine's steal time, in cores, which a
virtual machine's host takes). A start-up that takes longer with the same CPU-seconds and
many more involuntary switches waited for a core; the simulator shares a host's cores
between start-ups and loads in proportion to what each asks (docs/model.md, "A load's
CPU"). A benchmark: it prints figures and never fails on time; other work on the machine
moves them.
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from calibration.checkpoint.reader import buffer_bytes
from calibration.measure.disk_readers import Readers, write_copies
from calibration.measure.downloader import downloading
from calibration.measure.startup_probe import loading, spawn, time_to_ready
from calibration.measure.synthetic import llama_shapes, random_bf16
from calibration.remote.running import RunningStore, running_store
from thaw_kernel.units import parse_bandwidth, parse_size

OTHERS = {
    "spin": "x = 0\nwhile True:\n    x = (x * 1103515245 + 12345) & 0xFFFFFFFF\n",
    "copy": (
        "import numpy as np\na = np.ones(256 << 20, np.uint8)\nb = np.empty_like(a)\n"
        "while True:\n    np.copyto(b, a)\n"
    ),
    "fault": (
        "import mmap\nwhile True:\n    m = mmap.mmap(-1, 256 << 20)\n"
        "    for i in range(0, 256 << 20, 4096):\n        m[i] = 1\n    m.close()\n"
    ),
}
SETTLE_S = 1.0  # the other process runs this long before the start-up begins
TICK = os.sysconf("SC_CLK_TCK")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, required=True, help="where the checkpoint goes")
    parser.add_argument("--size", default="1GB", help="the loaded checkpoint's size")
    parser.add_argument("--runs", type=int, default=6, help="rounds of every kind")
    parser.add_argument("--remote-rate", default="300MB/s", help="the store's pace")
    parser.add_argument("--json", action="store_true", help="one JSON object")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(dir=args.dir, prefix="startup-beside-"))
    try:
        rate = parse_bandwidth(args.remote_rate)
        results = _measure(work, parse_size(args.size), args.runs, rate)
    finally:
        shutil.rmtree(work)
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        _print(results)
    return 0


def _measure(work: Path, size: int, runs: int, rate: float) -> dict:
    checkpoint = write_copies(work, random_bf16(llama_shapes(size)), count=1)[0]
    samples: dict[str, list[tuple[float, float, int, float]]] = {
        kind: [] for kind in ("alone", *OTHERS, "load", "download")
    }
    _timed(lambda: None)  # the first start-up may read torch from disk: not counted
    with Readers(1, buffer_bytes(checkpoint)) as reader, running_store(work, rate) as store:
        for _ in range(runs):
            samples["alone"].append(_timed(lambda: None))
            for kind, code in OTHERS.items():
                samples[kind].append(_beside_process(code))
            samples["load"].append(_beside_load(reader, checkpoint))
            samples["download"].append(_beside_download(store, checkpoint, work))
    alone = statistics.median(s[0] for s in samples["alone"])
    return {
        kind: {
            "wall_s": statistics.median(s[0] for s in rows),
            "ratio": statistics.median(s[0] for s in rows) / alone,
            "cpu_s": statistics.median(s[1] for s in rows),
            "involuntary_switches": statistics.median(s[2] for s in rows),
            "other_cores": statistics.median(s[3] for s in rows),
            "walls_s": [round(s[0], 3) for s in rows],
        }
        for kind, rows in samples.items()
    }


def _timed(beside: Callable[[], float]) -> tuple[float, float, int, float]:
    """One start-up: wall and CPU seconds, involuntary switches; and `beside()`, called
    once it is ready (the other process's cores meanwhile)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_nivcsw
    wall, cpu = time_to_ready(spawn("cpu"), time.perf_counter())
    switches = resource.getrusage(resource.RUSAGE_CHILDREN).ru_nivcsw - before
    return wall, cpu, switches, beside() or 0.0


def _beside_process(code: str) -> tuple[float, float, int, float]:
    other = subprocess.Popen([sys.executable, "-c", code])
    try:
        time.sleep(SETTLE_S)
        cpu, at = _cpu_s(other.pid), time.monotonic()
        return _timed(lambda: (_cpu_s(other.pid) - cpu) / (time.monotonic() - at))
    finally:
        other.kill()
        other.wait()


def _beside_load(reader: Readers, checkpoint: Path) -> tuple[float, float, int, float]:
    """A start-up beside `reader` loading `checkpoint` cold again and again, and the
    machine's steal time meanwhile, in cores."""
    with loading(reader, checkpoint):
        steal, at = _steal_s(), time.monotonic()
        return _timed(lambda: (_steal_s() - steal) / (time.monotonic() - at))


def _beside_download(
    store: RunningStore, checkpoint: Path, work: Path
) -> tuple[float, float, int, float]:
    """A start-up beside a process downloading `checkpoint` through `store` again and
    again, and the client's and the store's cores meanwhile."""
    with downloading(store.url, checkpoint.name, work / "downloaded") as other:
        cpu, at = _cpu_s(other.pid) + store.cpu_s(), time.monotonic()
        return _timed(lambda: (_cpu_s(other.pid) + store.cpu_s() - cpu) / (time.monotonic() - at))


def _cpu_s(pid: int) -> float:
    """A process's user and system CPU-seconds so far (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def _steal_s() -> float:
    """The machine's steal time so far, in CPU-seconds (/proc/stat)."""
    return int(Path("/proc/stat").read_text().split("\n")[0].split()[8]) / TICK


def _print(results: dict) -> None:
    print("beside   wall s   ratio   cpu s   invol. switches   other's cores")
    for kind, r in results.items():
        print(
            f"{kind:<8} {r['wall_s']:6.3f}   {r['ratio']:5.2f}   {r['cpu_s']:5.3f}   "
            f"{r['involuntary_switches']:15.0f}   {r['other_cores']:13.2f}"
        )
    print("(load: the other column is the machine's steal time)")


if __name__ == "__main__":
    sys.exit(main())
