"""`python -m calibration.measure`: measure this machine and write the profile `sim` runs on.

    python -m calibration.measure [--device cpu|cuda] [--dir PATH_ON_THE_DISK]
        [--size 2GiB] [--checkpoint SRC] [--runs N] [--quick] [--out profile.json]
        [--remote-rate BYTES_PER_S]

Runs, in order, with a line of progress for each figure: the storage (raw O_DIRECT read
sweep, the real loader cold and warm, safetensors cold and warm, on a checkpoint written
into `--dir`; then 1, 2 and 4 processes loading their own copies of a random checkpoint
at once), host-to-device copies, an instance's start-up cost, decode and prefill of a
reference model, token migration to a second process, and with `--remote-rate`
downloads through the remote store paced to that rate (`calibration.remote`) and
start-ups beside them. Then fits
the cost models, checks that the figures are physically possible together, and writes
the profile (sim/config/profile.py's schema) atomically. Its working files in `--dir`
are removed at the end. `--quick` (under a minute on a 2-core VM) is for tests, not for
published numbers.
"""

import argparse
import json
import os
import shlex
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

import torch

from calibration.checkpoint.direct_io import BLOCK
from calibration.checkpoint.format import read_index
from calibration.checkpoint.pagecache import PageCacheError
from calibration.measure.copy_probe import measure_copies
from calibration.measure.delete_probe import DELETE, measure_deletes
from calibration.measure.derivation import derive
from calibration.measure.disk_readers import READERS, measure_readers, write_copies
from calibration.measure.inference_probe import measure_decode, measure_prefill, model_bytes
from calibration.measure.linear_fit import Points
from calibration.measure.machine_description import describe
from calibration.measure.measurement import Measurement
from calibration.measure.migration_probe import measure_migration
from calibration.measure.page_reporting import free_page_reporting
from calibration.measure.plausibility import check
from calibration.measure.remote_probe import measure_remote
from calibration.measure.settings import CPU_INFERENCE_THREADS, Settings, settings
from calibration.measure.startup_probe import (
    BESIDE_DOWNLOAD,
    BESIDE_LOAD,
    BETWEEN_DOWNLOADS,
    CONCURRENCY,
    measure_beside_download,
    measure_startups,
)
from calibration.measure.storage_probe import (
    NotADisk,
    StorageFiles,
    measure_storage,
    prepare,
    require_a_disk,
)
from calibration.measure.synthetic import llama_shapes, random_bf16
from calibration.measure.take_probe import TAKE, measure_take
from calibration.measure.warmup_probe import measure_warmup
from calibration.migration.model import Transformer, save_model
from calibration.remote.command import rate
from sim.config import profile
from thaw_kernel.command_line import Parser, run
from thaw_kernel.errors import InputError
from thaw_kernel.publish import write_file_atomically
from thaw_kernel.units import parse_size

PROG = "python -m calibration.measure"
STEPS = 7  # and one more with --remote-rate


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = _parser().parse_args(argv)
    # A killed run still removes its scratch files (`finally` runs on SystemExit).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))

    def body() -> None:
        _check_arguments(args)
        chosen = settings(args.device, args.quick, args.size, args.runs)
        said = f"{args.description} Measured by `{PROG} {shlex.join(argv)}`".strip()
        try:
            document = measure(
                args.device, args.dir, chosen, args.checkpoint, said, args.remote_rate
            )
        except NotADisk as err:
            raise NotADisk(f"{err}: pass --dir on the disk to measure") from None
        except PageCacheError as err:
            raise InputError(str(err)) from None
        text = json.dumps(document, indent=2) + "\n"
        write_file_atomically(args.out, lambda path: path.write_text(text, encoding="utf-8"))
        print(f"{PROG}: wrote {args.out}", file=sys.stderr)

    return run(PROG, body)


def _check_arguments(args: argparse.Namespace) -> None:
    """Refuse, before measuring for minutes, what would only fail at the end."""
    if args.device == "cuda" and not torch.cuda.is_available():
        raise InputError("--device cuda: no CUDA device here")
    if args.checkpoint is not None and not args.checkpoint.exists():
        raise InputError(f"--checkpoint {args.checkpoint}: no such file or directory")
    if not args.dir.is_dir():
        raise InputError(f"--dir {args.dir}: no such directory")
    if not os.access(args.dir, os.W_OK):
        raise InputError(f"--dir {args.dir}: not writable")
    if args.out.is_dir():
        raise InputError(f"--out {args.out}: is a directory; name the profile's file")
    if not args.out.parent.is_dir():
        raise InputError(f"--out {args.out}: no such directory {args.out.parent}")
    if not os.access(args.out.parent, os.W_OK):
        raise InputError(f"--out {args.out}: {args.out.parent} is not writable")


def measure(
    device: str,
    directory: Path,
    chosen: Settings,
    source: Path | None,
    said: str,
    remote_rate: float | None = None,
) -> dict:
    """Run every measurement in a scratch directory under `directory`; the profile, whose
    machine description begins with `said`. With `remote_rate` (bytes/s), downloads
    through the remote store paced to it too, and the profile has a network."""
    started = time.perf_counter()
    scratch = Path(tempfile.mkdtemp(prefix="thaw-measure-", dir=directory))
    try:
        measurements, points, checkpoint_bytes, reference_bytes = _measure_all(
            device, scratch, chosen, source, remote_rate
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    check(measurements, device, remote_rate)
    derived, notes, fits = derive(
        measurements,
        points["decode"],
        points["prefill"],
        points["migration"],
        reference_bytes,
        cpus=os.cpu_count() or 1,
        device=device,
    )
    reporting = free_page_reporting()  # measured with it on, loads' CPU hangs on history
    if reporting is not None:
        notes.append(reporting.note())
    machine = describe(device, directory, chosen, said, checkpoint_bytes, notes, fits)
    if remote_rate is not None:
        machine["settings"]["remote_rate_bytes_per_s"] = remote_rate
    # The loader against the device, as DESIGN's profile contract asks: raw is the best
    # configuration of a sweep, so this is a lower bound on the loader's efficiency.
    machine["loader_efficiency"] = (
        measurements["loader_cold"].median / measurements["raw_cold"].median
    )
    machine["measure_wall_s"] = round(time.perf_counter() - started, 1)
    document = {
        "version": profile.SCHEMA_VERSION,
        "machine": machine,
        "measurements": {name: m.record() for name, m in sorted(measurements.items())},
        "derived": derived,
    }
    profile.parse(document)  # never write what `sim run --profile` would refuse
    return document


def _measure_all(
    device: str, scratch: Path, chosen: Settings, source: Path | None, remote_rate: float | None
) -> tuple[dict[str, Measurement], dict[str, Points], int, int]:
    """Every measurement by name, the points the cost models are fitted on, the bytes of
    the storage checkpoint and of the reference model."""
    require_a_disk(scratch)
    steps = STEPS + (remote_rate is not None)
    _step(1, steps, "storage: writing the checkpoint to read")
    files = prepare(scratch, chosen.checkpoint_bytes, source)
    payload = files.payload_bytes
    _say(f"{payload / 2**20:.0f} MiB of tensors in {files.checkpoint}")
    results = measure_storage(
        files, device, chosen.runs, list(chosen.raw_grid), chosen.sweep_rounds, _say
    )
    at_once = ", ".join(map(str, READERS))
    _say(f"{at_once} readers at once: writing {max(READERS)} copies to read")
    copies = write_copies(scratch, random_bf16(llama_shapes(chosen.reader_bytes)))
    results |= measure_readers(copies, chosen.runs, _say)
    _step(2, steps, "host memory to device copies")
    results |= _copies(files, device, chosen.runs)
    results |= measure_take(files.checkpoint, device, chosen.runs, scratch)
    _say(f"an engine's take from the DRAM cache: {results[TAKE].median / 1e9:.2f} GB/s (median)")
    _step(3, steps, "instance start-up (a fresh process importing torch)")
    results |= measure_startups(device, chosen.startup_runs, chosen.startup_rounds, copies[0])
    _say(
        f"start-up: {results['instance_startup'].median:.2f} s (median), "
        f"{results['instance_startup_cpu'].median:.2f} CPU-seconds; at once: "
        + ", ".join(f"{k}: {results[f'instance_startup_x{k}'].median:.2f} s" for k in CONCURRENCY)
        + f"; beside a load: {results[BESIDE_LOAD].median:.2f} s"
    )
    _step(4, steps, "decode steps by batch size")
    threads = CPU_INFERENCE_THREADS if device == "cpu" else None
    if threads:
        torch.set_num_threads(threads)
    model = Transformer.random(chosen.model, seed=0, device=device)
    decode_results, decode = measure_decode(model, chosen.decode_batches, chosen.decode_steps)
    _say(", ".join(f"batch {b:.0f}: {s * 1e3:.1f} ms" for b, s in decode.pairs()))
    _step(5, steps, "prefill (KV recompute) by prompt length")
    prefill_results, prefill = measure_prefill(model, chosen.prefill_lengths, chosen.prefill_runs)
    _say(", ".join(f"{n:.0f} tokens: {n / s:.0f}/s" for n, s in prefill.pairs()))
    _step(6, steps, "token migration to a second process")
    checkpoint = scratch / "reference-model"
    save_model(model, checkpoint)
    migration_results, migration = measure_migration(
        model,
        checkpoint,
        _second_device(device),
        chosen.migration_lengths,
        chosen.migration_runs,
        chosen.migration_new_tokens,
        threads,
    )
    _say(", ".join(f"{n:.0f} tokens: {s * 1e3:.0f} ms" for n, s in migration.pairs()))
    _say(f"one migration paused the request {migration_results['migration_pause'].median:.3f} s")
    _step(7, steps, "warm-up: building the model and its first pass, in a fresh process")
    warmup = measure_warmup(
        checkpoint, chosen.model, device, chosen.prefill_lengths[0], threads, chosen.startup_runs
    )
    _say(f"warm-up: {warmup['instance_warmup'].median * 1e3:.0f} ms (median)")
    results |= decode_results | prefill_results | migration_results | warmup
    if remote_rate is not None:
        _step(8, steps, "remote store: downloads through its paced link")
        results |= measure_remote(copies[0], scratch, remote_rate, chosen.remote_downloads, _say)
        # A tenth of a start-up's time, where one pair's ratio spreads by a sixth on the
        # project's VM: four times the start-ups timed alone.
        pairs = 4 * chosen.startup_runs
        results |= measure_beside_download(device, copies[0], scratch, remote_rate, pairs)
        _say(
            f"start-ups beside a download: {results[BESIDE_DOWNLOAD].median:.2f} s, alone "
            f"between them: {results[BETWEEN_DOWNLOADS].median:.2f} s (medians of {pairs})"
        )
    results |= measure_deletes(copies)  # the copies' last use
    _say(f"deleting a copy held the disk {results[DELETE].median * 1e9:.3f} s/GB (median)")
    points = {"decode": decode, "prefill": prefill, "migration": migration}
    return results, points, payload, model_bytes(model)


def _copies(files: StorageFiles, device: str, runs: int) -> dict[str, Measurement]:
    sizes = [entry.nbytes for entry in read_index(files.checkpoint).tensors]
    results = measure_copies(device, sizes, runs)
    for name, value in results.items():
        _say(f"{name.removeprefix('dram_to_device_')}: {value.median / 1e9:.2f} GB/s (median)")
    return results


def _second_device(device: str) -> str:
    """Where the migration's destination runs: another GPU if there is one."""
    if device == "cpu":
        return "cpu"
    return "cuda:1" if torch.cuda.device_count() > 1 else "cuda:0"


def _step(number: int, steps: int, what: str) -> None:
    _say(f"[{number}/{steps}] {what}")


def _say(line: str) -> None:
    print(f"measure: {line}", file=sys.stderr, flush=True)


def _size(text: str) -> int:
    try:
        size = parse_size(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    if size < BLOCK:
        raise argparse.ArgumentTypeError(f"{text!r} is under {BLOCK} bytes")
    return size


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return int(text)


def _parser() -> Parser:
    parser = Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument(
        "--dir",
        type=Path,
        default=Path(tempfile.gettempdir()),
        help="a directory on the disk to measure (default: the temporary directory)",
    )
    parser.add_argument(
        "--size", type=_size, help="checkpoint size for the storage figures (default 2GiB)"
    )
    parser.add_argument(
        "--checkpoint",
        type=Path,
        help="measure the loader on these tensors instead (safetensors, sharded HF "
        "directory or PyTorch state dict)",
    )
    parser.add_argument(
        "--runs",
        type=_positive,
        help="rounds of each storage figure and copy, and start-ups timed (default 5; "
        "--quick: 6 rounds, 3 start-ups)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a fast pass for tests: a 64 MiB checkpoint, a small model, fewer rounds (about "
        "40 s on a 2-core VM; --remote-rate adds about a minute)",
    )
    parser.add_argument(
        "--remote-rate",
        type=rate,
        help="also measure downloads through the remote store paced to this rate per "
        "server (bytes/s, or e.g. 160MB/s), for the profile's network_bytes_per_s "
        "(default: no network in the profile)",
    )
    parser.add_argument("--out", type=Path, default=Path("profile.json"))
    parser.add_argument("--description", default="", help="what the machine is, in words")
    return parser
