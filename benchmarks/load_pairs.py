"""Two cold loads from SSD at once by the replay's engines, against two warm readers'.

    python benchmarks/load_pairs.py [--dir /var/tmp] [--rounds 5] [--small] [--json]

A warm reader and a fresh engine are different processes. `calibration.measure` times
the disk, and a load's CPU-seconds per byte, with reader processes
(`calibration.measure.disk_readers.Readers`) started once, before any timing, that load
on command; a replay's load is one of its engine processes
(`calibration.validate.instance_process`) freshly spawned, torch just imported, loading
with thaw's loader into a DRAM cache directory on /dev/shm. The simulator is given the
readers' figures for the engine's loads; this benchmark checks that they are the same
loads. On the project's VM they are: with `--rounds 6` (2026-12-06), two engines at once
read 1.00 to 1.11 times what two readers read on the same files in the same minutes, and
an engine's load spent 0.98 times a reader's CPU-seconds per byte. Neither counts the
freeing of the copy it loaded (an instance's copy is freed when the DRAM cache evicts
it), which adds about 15% to a reader's CPU-seconds per byte (0.95 against 0.83 s/GB):
counted in, the second ratio is 0.81.

On the `tiers` scenario's checkpoints (`write_checkpoints(TIERS_QUICK, ...)`: 2 GB on
server 0's SSD, 1.5 GB on server 1's; with `--small`, the decoders' own, 38 and 64 MB),
written in a temporary directory under `--dir`, each round times, in this order:

- `engine alone`: one engine loading each checkpoint, one at a time;
- `engine pair`: two engines, one per checkpoint, told to load at once (`reprobe.timed_loads`:
  each started and held, the checkpoints evicted, then a line to each; from that line
  to each `loaded`, and the CPU-seconds since `started`);
- `reader alone`, `reader pair`: the same with two warm readers, timed from the word to
  load to each reader's end, with the CPU-seconds each reports.

For each it prints the median load seconds (a pair: until both are loaded), GB/s (a
pair: the disk's rate while both read, `reprobe.shared_rate`: what the first to finish
read over its time, times two) and CPU-seconds per GB (a pair: both loads' together over
both's bytes); then the engine pair's rate over the reader pair's, and an engine's CPU
per byte alone over a reader's (all alone loads of both checkpoints). Reads are cold:
every checkpoint is evicted with posix_fadvise before each load and checked with mincore,
as the loader does, but that is the guest's page cache only; a virtual disk's host may
still cache part of a "cold" read. The kinds take turns within each round, so drift hits
all alike, and figures are medians over rounds on a machine whose other work moves them:
a benchmark, which prints figures and never fails on time.
"""

import json
import shutil
import statistics
import sys
import time
from pathlib import Path

from engine_rounds import command_line

from calibration.checkpoint.format import BLOB_NAME, payload_bytes
from calibration.checkpoint.pagecache import make_cold
from calibration.checkpoint.reader import buffer_bytes
from calibration.measure.disk_readers import LOAD_COMMAND, Readers
from calibration.validate.reprobe import Load, shared_rate, timed_loads
from calibration.validate.scenario import (
    Layout,
    Scenario,
    workspace,
    write_checkpoints,
)
from thaw_kernel.command_line import run as run_cli

# The two checkpoints loaded, and the server whose SSD holds each (the `tiers` placement).
HELD = {"small": 0, "medium": 1}
# `--small`: the decoders' own checkpoints, one SSD copy each, as the `tiers` places them.
SMALL = Scenario(requests=1, rate=1.0, ssd_copies=1)
GB = 1e9

Samples = dict[str, list[list[Load]]]  # per kind, each round's loads


def main(argv: list[str] | None = None) -> int:
    args, scenario = command_line("load_pairs.py", __doc__, argv, SMALL)
    with workspace(args.dir, "load-pairs-") as layout:
        checkpoints = _write(scenario, layout)
        samples = _measure(scenario, layout, checkpoints, args.rounds)
        sizes = {model: payload_bytes(path) for model, path in checkpoints.items()}
    results = _summary(samples, sizes, args.rounds)
    print(json.dumps(results, indent=2) if args.json else _table(results))
    return 0


def _write(scenario: Scenario, layout: Layout) -> dict[str, Path]:
    """The scenario's checkpoints written and cold; those of `HELD` by model. The remote
    store's copies (memory) are removed: nothing here downloads."""
    write_checkpoints(scenario, layout)
    shutil.rmtree(layout.store, ignore_errors=True)
    return {model: layout.ssd(server, model) for model, server in HELD.items()}


def _measure(
    scenario: Scenario, layout: Layout, checkpoints: dict[str, Path], rounds: int
) -> Samples:
    """`rounds` rounds of every kind, in turn."""
    held = [(HELD[model], path) for model, path in checkpoints.items()]
    samples: Samples = {}

    def add(kind: str, loads: list[Load]) -> None:
        samples.setdefault(kind, []).append(loads)

    size = max(buffer_bytes(path) for path in checkpoints.values())
    with Readers(len(held), size) as readers:
        for _ in range(rounds):
            for model, one in zip(checkpoints, held, strict=True):
                add(f"engine alone {model}", timed_loads(scenario, layout, [one]))
            add("engine pair", timed_loads(scenario, layout, held))
            for model, path in checkpoints.items():
                add(f"reader alone {model}", _read(readers, [path]))
            add("reader pair", _read(readers, list(checkpoints.values())))
    return samples


def _read(readers: Readers, paths: list[Path]) -> list[Load]:
    """Readers loading `paths` cold at once, one each: from the word to load to each
    one's end, and the CPU-seconds each took (no start-up: they are warm)."""
    for path in paths:
        make_cold(str(path / BLOB_NAME))
    begun = time.monotonic()
    stamps = readers.stamps(LOAD_COMMAND, paths)
    return [
        Load(0.0, 0.0, load_s=end - begun, load_cpu_s=cpu_s, bytes=payload_bytes(path))
        for (_, end, cpu_s), path in zip(stamps, paths, strict=True)
    ]


def _summary(samples: Samples, sizes: dict[str, int], rounds: int) -> dict:
    """Each kind's medians, and the engine's figures over the reader's; `sizes`, each
    checkpoint's tensor bytes by model."""
    kinds = {kind: _row(loads) for kind, loads in samples.items()}
    engine, reader = (
        statistics.median(
            load.load_cpu_s / load.bytes
            for model in sizes
            for (load,) in samples[f"{who} alone {model}"]
        )
        for who in ("engine", "reader")
    )
    return {
        "rounds": rounds,
        "bytes": sizes,
        "kinds": kinds,
        "pair_rate_engine_over_reader": kinds["engine pair"]["gb_per_s"]
        / kinds["reader pair"]["gb_per_s"],
        "alone_cpu_per_byte_engine_over_reader": engine / reader,
    }


def _row(rounds: list[list[Load]]) -> dict:
    """One kind's medians over its rounds: seconds until all its loads ended, GB/s (the
    disk's shared rate for a pair), and CPU-seconds per GB of them all."""
    walls = [max(load.load_s for load in loads) for loads in rounds]
    return {
        "load_s": statistics.median(walls),
        "gb_per_s": statistics.median(shared_rate(loads) for loads in rounds) / GB,
        "cpu_s_per_gb": statistics.median(
            sum(load.load_cpu_s for load in loads) / sum(load.bytes for load in loads)
            for loads in rounds
        )
        * GB,
        "loads_s": [round(wall, 3) for wall in walls],
    }


def _table(results: dict) -> str:
    sizes = ", ".join(f"{model} {size / GB:.3g} GB" for model, size in results["bytes"].items())
    lines = [
        f"cold loads from SSD ({sizes}), medians of {results['rounds']} round(s)",
        "kind                 load s    GB/s   CPU s/GB",
    ]
    for kind, row in results["kinds"].items():
        lines.append(
            f"{kind:<19} {row['load_s']:7.2f} {row['gb_per_s']:7.2f} {row['cpu_s_per_gb']:10.2f}"
        )
    lines += [
        "(a pair's GB/s: the disk's rate while both read; its load s: until both are loaded)",
        f"engine pair / reader pair, GB/s: {results['pair_rate_engine_over_reader']:.2f}",
        "engine / reader, CPU per byte alone: "
        f"{results['alone_cpu_per_byte_engine_over_reader']:.2f}",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(run_cli("load_pairs.py", main))
