"""How fast does thaw's loader read a checkpoint, against the device and today's loaders?

    python benchmarks/loader.py --size 1GiB --dir DIR [--device cpu|cuda] [--runs N] [--json]

Makes a Llama-shaped checkpoint of about `--size` (random bf16 bytes) in DIR, as a
safetensors file, a PyTorch state dict and a thaw checkpoint, then measures in one run:

- raw: an O_DIRECT read of the thaw blob into a pre-faulted aligned buffer, the best
  request size and thread count of a sweep: the physical limit, read only.
- safetensors `load_file`, `torch.load(weights_only=True)`, and thaw's `load` (given
  a reused, pre-faulted buffer, as a checkpoint store keeps, the one raw reads into;
  "thaw fresh" allocates one per load). Cold, thaw reads with O_DIRECT; warm, on the
  CPU it maps the cached file as safetensors does ("thaw buffered", warm only, is the
  copying path: the page cache read into the reused buffer).
  Every loader's tensors are then touched through a wide (int64) view, so mmap-backed
  loaders pay what they deferred; the touch is part of each loader's time. "thaw
  no-touch" is the same thaw run timed without it: thaw's load has already read every
  byte once (to check its sums), so for thaw the touch is a second pass.
- the copy ceiling: host memory to the device, as `calibration.measure` copies it
  (pageable or pinned, one copy or one per tensor; pinned only on a GPU). No load from
  the page cache onto the device can beat the best of them.

Cold: the files' pages were evicted first (POSIX_FADV_DONTNEED, checked with mincore);
that is guest-cold, since a cache behind a virtual disk may survive it. Warm: the file
is read into the page cache first (checked). Variants interleave within each run. A cold
figure well above raw means something cached answered, and is flagged. A benchmark: it
prints figures and never fails on time. GB/s are 10**9 bytes of tensor payload per s.
"""

import argparse
import gc
import itertools
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

import calibration
from calibration.checkpoint import pagecache
from calibration.checkpoint.buffers import host_buffer
from calibration.checkpoint.format import BLOB_NAME, is_checkpoint, payload_bytes, read_index
from calibration.checkpoint.reader import choose_mode
from calibration.measure.copy_probe import measure_copies
from calibration.measure.raw_read import DirectIORefused
from calibration.measure.raw_read import raw_read as direct_read
from calibration.measure.synthetic import llama_shapes, random_bf16
from calibration.measure.touch import touch
from thaw_kernel.units import parse_size

MiB = 2**20
RAW_CHUNKS = [1 * MiB, 4 * MiB, 16 * MiB, 64 * MiB]
RAW_THREADS = [1, 2, 4]
WARM_CHUNKS = [1 * MiB, 4 * MiB, 16 * MiB]
LOADERS = ["safetensors", "torch.load", "thaw", "thaw fresh"]
WARM_LOADERS = [*LOADERS, "thaw buffered"]
THAW_MODES = {"thaw": "auto", "thaw fresh": "auto", "thaw buffered": "buffered"}
NO_TOUCH = "thaw no-touch"
# A cold result this much faster than the raw device was (partly) served from a cache.
CACHE_SUSPECT = 1.15
RAW_FINALISTS = 3


def make_files(directory: Path, size: int) -> dict[str, Path]:
    """The same random tensors in all three formats (reused if already there)."""
    base = directory / f"thaw-loader-bench-{size}"
    files = {
        "safetensors": base / "model.safetensors",
        "torch.load": base / "model.pt",
        "thaw": base / "thaw",
    }
    shapes = llama_shapes(size)
    if all(path.exists() for path in files.values()) and is_checkpoint(files["thaw"]):
        written = {entry.name: entry.shape for entry in read_index(files["thaw"]).tensors}
        if written == shapes:
            return files
    base.mkdir(parents=True, exist_ok=True)
    tensors = random_bf16(shapes)
    save_file(tensors, files["safetensors"])
    torch.save(tensors, files["torch.load"])
    calibration.write_checkpoint(tensors, files["thaw"])
    return files


def make_cold(path: Path) -> float:
    try:
        return pagecache.make_cold(str(path))
    except pagecache.PageCacheError as err:
        sys.exit(f"benchmarks/loader.py: {err}")


def make_warm(path: Path) -> float:
    try:
        return pagecache.make_warm(str(path))
    except pagecache.PageCacheError as err:
        sys.exit(f"benchmarks/loader.py: {err}")


def raw_read(blob: Path, buffer: torch.Tensor, chunk: int, threads: int) -> float:
    try:
        return direct_read(blob, buffer, chunk, threads)
    except DirectIORefused as err:
        sys.exit(f"benchmarks/loader.py: {err}; use --dir on a disk")


class Bench:
    """Runs each variant with its setup outside the clock and keeps the seconds."""

    def __init__(self, files: dict[str, Path], device: str) -> None:
        self.files = files
        self.device = device
        self.target = torch.device(device)
        self.blob = files["thaw"] / BLOB_NAME
        self.payload = payload_bytes(files["thaw"])
        size = calibration.buffer_bytes(files["thaw"])
        # Raw and (on the CPU) thaw read into the same pre-faulted buffer: on this VM,
        # O_DIRECT into one buffer ran 35% slower than into another allocated just after
        # it (1.19 against 1.83 GB/s, medians of 3), presumably where the host placed it.
        self.host = host_buffer(size)
        self.out = (
            self.host if device == "cpu" else torch.empty(size, dtype=torch.uint8, device=device)
        )
        self.seconds: dict[tuple[str, str], list[float]] = {}
        self.thaw_modes: set[str] = set()
        # The most a cold run found cached, the least a warm run did, just before loading.
        self.resident = {"cold": 0.0, "warm": 1.0}

    def source(self, variant: str) -> Path:
        return self.blob if variant.startswith(("thaw", "raw")) else self.files[variant]

    def loader(self, variant: str, **options) -> Callable[[], dict[str, torch.Tensor]]:
        device = self.device
        if variant == "safetensors":
            return lambda: load_file(self.files["safetensors"], device=device)
        if variant == "torch.load":
            return lambda: torch.load(
                self.files["torch.load"], map_location=device, weights_only=True
            )
        out = None if variant == "thaw fresh" else self.out
        options = {"mode": THAW_MODES[variant]} | options
        return lambda: calibration.load(self.files["thaw"], device, out=out, **options)

    def measure(self, variant: str, state: str, **options) -> float:
        """One timed run of `variant` from a `state` ("cold" or "warm") page cache."""
        source = self.source(variant)
        resident = make_cold(source) if state == "cold" else make_warm(source)
        self.resident[state] = (min if state == "warm" else max)(self.resident[state], resident)
        if variant.startswith("thaw"):
            mode = options.get("mode", THAW_MODES[variant])
            self.thaw_modes.add(f"{variant} {state}: {choose_mode(source, mode, self.target)}")
        gc.collect()
        if variant == "raw":
            seconds = raw_read(self.blob, self.host, options["chunk"], options["threads"])
        else:
            load = self.loader(variant, **options)
            started = time.perf_counter()
            tensors = load()
            self.synchronize()
            loaded = time.perf_counter()
            touch(tensors)
            self.synchronize()
            seconds = time.perf_counter() - started
            if variant == "thaw":  # its checksum pass has already read every byte once
                self.seconds.setdefault((NO_TOUCH, state), []).append(loaded - started)
        key = f"raw {_label(options['chunk'], options['threads'])}" if variant == "raw" else variant
        self.seconds.setdefault((key, state), []).append(seconds)
        return seconds

    def synchronize(self) -> None:
        if self.device != "cpu":
            torch.cuda.synchronize()

    def gbps(self, seconds: float, variant: str = "") -> float:
        size = os.path.getsize(self.blob) if variant == "raw" else self.payload
        return size / seconds / 1e9


def _label(chunk: int, threads: int) -> str:
    return f"{chunk // 1024}KiB x{threads}"


def sweep(bench: Bench, variant: str, state: str, grid, runs: int) -> dict[str, float]:
    """Median GB/s of `variant` for each (chunk, threads) of the grid."""
    results = {}
    for chunk, threads in grid:
        options = (
            {"chunk": chunk, "threads": threads}
            if variant == "raw"
            else {
                "chunk_bytes": chunk,
                "threads": threads,
                "mode": "direct" if state == "cold" else warm_mode(bench.device),
            }
        )
        seconds = [bench.measure(variant, state, **options) for _ in range(runs)]
        results[_label(chunk, threads)] = bench.gbps(statistics.median(seconds), variant)
    bench.seconds = {}
    return results


def warm_mode(device: str) -> str:
    """What `load` does with a cached file on `device` (the warm sweep's mode)."""
    return "map" if device == "cpu" else "buffered"


def summary(bench: Bench) -> dict:
    stats = {}
    for variant, state in itertools.product(["raw", *WARM_LOADERS, NO_TOUCH], ["cold", "warm"]):
        seconds = bench.seconds.get((variant, state))
        if not seconds:
            continue
        rates = sorted(bench.gbps(value, variant) for value in seconds)
        stats[f"{variant} {state}"] = {
            "median_gbps": statistics.median(rates),
            "min_gbps": rates[0],
            "max_gbps": rates[-1],
            "n": len(rates),
        }
    raw = stats["raw cold"]["median_gbps"]
    for key, value in stats.items():
        safetensors = stats[f"safetensors {key.rsplit(' ', 1)[1]}"]["median_gbps"]
        value["vs_raw"] = value["median_gbps"] / raw
        value["vs_safetensors"] = value["median_gbps"] / safetensors
    return stats


def bit_identical(files: dict[str, Path]) -> bool:
    reference = load_file(files["safetensors"])
    loaded = calibration.load(files["thaw"])
    return reference.keys() == loaded.keys() and all(
        torch.equal(loaded[name].view(torch.int16), reference[name].view(torch.int16))
        for name in reference
    )


def copy_ceiling(files: dict[str, Path], device: str, runs: int) -> dict[str, float]:
    """Median GB/s of each way of copying the tensors from host memory to `device`."""
    sizes = [entry.nbytes for entry in read_index(files["thaw"]).tensors]
    return {
        name.removeprefix("dram_to_device_"): measurement.median / 1e9
        for name, measurement in measure_copies(device, sizes, runs).items()
    }


def run(args: argparse.Namespace) -> dict:
    size = parse_size(args.size)
    files = make_files(args.dir, size)
    bench = Bench(files, args.device)
    raw_grid = list(itertools.product(RAW_CHUNKS, RAW_THREADS))
    raw_sweep = sweep(bench, "raw", "cold", raw_grid, args.sweep_runs)
    # The sweep's single best sample is partly luck; its best few all go into every run.
    finalists = sorted(raw_grid, key=lambda config: raw_sweep[_label(*config)])[-RAW_FINALISTS:]
    thaw_cold_sweep = sweep(bench, "thaw", "cold", raw_grid, args.sweep_runs)
    thaw_warm_sweep = sweep(
        bench, "thaw", "warm", list(itertools.product(WARM_CHUNKS, [1, 2, 4])), args.sweep_runs
    )
    bench.thaw_modes = set()
    for run_number in range(args.runs):
        order = LOADERS[run_number % len(LOADERS) :] + LOADERS[: run_number % len(LOADERS)]
        for chunk, threads in finalists:
            bench.measure("raw", "cold", chunk=chunk, threads=threads)
        for variant in order:
            bench.measure(variant, "cold")
        for variant in order + WARM_LOADERS[len(LOADERS) :]:
            bench.measure(variant, "warm")
    raw_runs = {
        config: bench.seconds.pop((f"raw {_label(*config)}", "cold")) for config in finalists
    }
    best = min(finalists, key=lambda config: statistics.median(raw_runs[config]))
    bench.seconds[("raw", "cold")] = raw_runs[best]
    stats = summary(bench)
    copies = copy_ceiling(files, args.device, args.runs)

    def median(key: str) -> float:
        return stats[key]["median_gbps"]

    raw = median("raw cold")
    warnings = [
        f"{key}: {value['median_gbps']:.2f} GB/s is above the raw device's {raw:.2f} GB/s: "
        "a cache answered, or the raw read was unlucky"
        for key, value in stats.items()
        if key.endswith("cold") and value["median_gbps"] > CACHE_SUSPECT * raw
    ]
    return {
        "size_bytes": bench.payload,
        "tensors": len(read_index(files["thaw"]).tensors),
        "device": args.device,
        "runs": args.runs,
        "cold_is": "guest-cold (page cache evicted in this VM; a host cache may remain)",
        "raw_config": {"chunk_bytes": best[0], "threads": best[1]},
        "raw_finalists": {
            _label(*config): bench.gbps(statistics.median(runs), "raw")
            for config, runs in raw_runs.items()
        },
        "raw_cold_gbps": raw,
        "thaw_cold_gbps": median("thaw cold"),
        "thaw_fresh_cold_gbps": median("thaw fresh cold"),
        "safetensors_cold_gbps": median("safetensors cold"),
        "torch_load_cold_gbps": median("torch.load cold"),
        "thaw_warm_gbps": median("thaw warm"),
        "thaw_fresh_warm_gbps": median("thaw fresh warm"),
        "safetensors_warm_gbps": median("safetensors warm"),
        "torch_load_warm_gbps": median("torch.load warm"),
        "thaw_buffered_warm_gbps": median("thaw buffered warm"),
        "thaw_no_touch_cold_gbps": median(f"{NO_TOUCH} cold"),
        "thaw_no_touch_warm_gbps": median(f"{NO_TOUCH} warm"),
        "copy_gbps": copies,
        "copy_ceiling_gbps": max(copies.values()),
        "thaw_modes": sorted(bench.thaw_modes),
        "cold_resident_max": bench.resident["cold"],
        "warm_resident_min": bench.resident["warm"],
        "bit_identical": bit_identical(files),
        "variants": stats,
        "sweeps": {
            "raw cold": raw_sweep,
            "thaw cold": thaw_cold_sweep,
            "thaw warm": thaw_warm_sweep,
        },
        "warnings": warnings,
    }


def report(result: dict) -> str:
    lines = []
    lines.append(
        f"{result['size_bytes'] / 1e9:.2f} GB payload, {result['tensors']} tensors, "
        f"device {result['device']}, {result['runs']} runs; cold = {result['cold_is']}"
    )
    config = result["raw_config"]
    lines.append(
        f"raw = O_DIRECT, {config['chunk_bytes'] // MiB} MiB requests x {config['threads']} threads"
    )
    finalists = ", ".join(f"{name} {rate:.2f}" for name, rate in result["raw_finalists"].items())
    lines.append(
        f"(the best median of the sweep's top {RAW_FINALISTS}, each read in every run: {finalists})"
    )
    lines.append("")
    lines.append(
        f"{'variant':<22} {'median':>8} {'min':>7} {'max':>7}  {'/raw':>5} {'/safetensors':>12}"
    )
    for state in ("cold", "warm"):
        for key, value in result["variants"].items():
            if key.endswith(state):
                lines.append(
                    f"{key:<22} {value['median_gbps']:>8.2f} {value['min_gbps']:>7.2f} "
                    f"{value['max_gbps']:>7.2f}  {value['vs_raw']:>5.2f} "
                    f"{value['vs_safetensors']:>12.2f}"
                )
    lines.append("(GB/s; ratios of medians)")
    for name, grid in result["sweeps"].items():
        cells = ", ".join(f"{config} {rate:.2f}" for config, rate in grid.items())
        lines.append(f"sweep {name}: {cells}")
    cells = ", ".join(f"{name} {rate:.2f}" for name, rate in result["copy_gbps"].items())
    lines.append(f"host memory to {result['device']} (the warm ceiling): {cells}")
    lines.append(f"thaw read modes chosen: {', '.join(result['thaw_modes'])}")
    lines.append(
        f"page cache before loading: at most {result['cold_resident_max']:.1%} of a file "
        f"cold, at least {result['warm_resident_min']:.1%} warm (mincore)"
    )
    lines.append(f"bit-identical to safetensors: {result['bit_identical']}")
    lines.extend(f"WARNING: {warning}" for warning in result["warnings"])
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", default="1GiB", help="checkpoint size, e.g. 1GiB (default)")
    parser.add_argument("--dir", type=Path, required=True, help="directory on the disk to measure")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument(
        "--runs", type=int, default=5, help="interleaved runs per variant (default 5)"
    )
    parser.add_argument(
        "--sweep-runs", type=int, default=1, help="runs per sweep point (default 1)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead")
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA device here")
    result = run(args)
    print(json.dumps(result, indent=2) if args.json else report(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
