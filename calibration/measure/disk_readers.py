"""The host's disk under concurrent readers: 1, 2 and 4 processes loading at once.

A host's servers share one disk (the profile's `host_disk_bytes_per_s`); how much of it
several loads get together is measured, not assumed. Each reader is a process of its
own (`python -m calibration.measure.disk_readers BUFFER_BYTES`), as each instance is,
loading, when told, its own copy of the same checkpoint with the real loader, O_DIRECT
and checksums, into a new file on /dev/shm, as an instance's cold SSD load installs the
checkpoint in its DRAM cache on the way (fresh anonymous memory where there is no
/dev/shm); a refused O_DIRECT is an error, never a silent page-cache read. Where the
bytes land is part of a load: on the project's VM a reader loading into a buffer it had
touched before ran about twice as fast as loads into fresh memory, and a load into
fresh anonymous memory took about twice the CPU and 1.4 times the time of one into a
fresh /dev/shm file. The processes
are started once, before any timing, so that torch's import is not timed; each round
evicts the copies it reads (checked with mincore, as the other cold figures are), then
tells its k readers to load at once.

A round's figure is the aggregate: the k copies' tensor bytes over the time from the
first reader's start to the last one's end, on the monotonic clock every process
shares. Each reader also reports the CPU-seconds its load took (`reader_load_cpu`, per
byte, from the 1-reader rounds): on a small host a load's page faults and checksums
take cores the start-ups beside it want. Rounds of 1, 2 and 4 readers take turns, with
a raw O_DIRECT read of the first copy in the loader's geometry by the first reader
(`raw_cold_beside_readers`), so a disk that drifts drifts for all of them and the
readers are judged against the device as it was then
(`calibration.measure.plausibility`). The raw read goes into the reader's own buffer,
not the parent's: on the project's VM the same O_DIRECT read ran 1.4 GB/s into one
buffer and 2.3-2.8 into another allocated later in the same process (the guest pages
behind a buffer matter), so only a read into the same memory is a fair bound. Readers
load onto the CPU whatever the profile's device: the figure is the disk's.
"""

import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path

import torch

from calibration.checkpoint.buffers import file_buffer, host_buffer
from calibration.checkpoint.format import BLOB_NAME, INDEX_NAME, payload_bytes
from calibration.checkpoint.pagecache import make_cold
from calibration.checkpoint.reader import (
    DEFAULT_CHUNK_BYTES,
    DEFAULT_THREADS,
    DirectIOFallback,
    buffer_bytes,
    load,
)
from calibration.checkpoint.writer import write_checkpoint
from calibration.measure.measurement import Measurement
from calibration.measure.raw_read import raw_read

READERS = (1, 2, 4)
RAW = "raw_cold_beside_readers"
CPU = "reader_load_cpu"  # CPU-seconds per tensor byte of one reader's load
LOAD_COMMAND, RAW_COMMAND = "load", "raw"
SHM = Path("/dev/shm")  # where an instance's DRAM cache lives
READY = "ready"


def write_copies(
    directory: Path, tensors: Mapping[str, torch.Tensor], count: int = max(READERS)
) -> list[Path]:
    """`count` checkpoints of `tensors`, one per reader: the first written, the others
    copies of it, each synced and evicted."""
    first = directory / "reader-0"
    write_checkpoint(tensors, first)
    copies = [first]
    for number in range(1, count):
        copy = directory / f"reader-{number}"
        copy.mkdir()
        for name in (INDEX_NAME, BLOB_NAME):
            shutil.copyfile(first / name, copy / name)
        copies.append(copy)
    for copy in copies:
        make_cold(str(copy / BLOB_NAME))  # fsyncs first: no write-back during a round
    return copies


def measure_readers(
    copies: list[Path], runs: int, progress: Callable[[str], None]
) -> dict[str, Measurement]:
    """`disk_readers_{k}` for k in `READERS`, aggregate bytes/s, `RAW`, the raw read in
    the same rounds, and `CPU`, the 1-reader loads' CPU-seconds per byte: `runs` rounds
    each."""
    payload = payload_bytes(copies[0])
    first = copies[0] / BLOB_NAME
    samples: dict[str, list[float]] = {}
    with Readers(max(READERS), buffer_bytes(copies[0])) as readers:
        for _ in range(runs):
            make_cold(str(first))
            took, _ = readers.together(RAW_COMMAND, [first])
            samples.setdefault(RAW, []).append(first.stat().st_size / took)
            for k in READERS:
                for copy in copies[:k]:
                    make_cold(str(copy / BLOB_NAME))
                took, cpu_s = readers.together(LOAD_COMMAND, copies[:k])
                samples.setdefault(f"disk_readers_{k}", []).append(k * payload / took)
                if k == 1:
                    samples.setdefault(CPU, []).append(cpu_s / payload)
    results = {
        name: Measurement(tuple(rates), "s/byte" if name == CPU else "bytes/s", False)
        for name, rates in samples.items()
    }
    progress(
        "concurrent readers, aggregate: "
        + ", ".join(f"{k}: {results[f'disk_readers_{k}'].median / 1e9:.2f} GB/s" for k in READERS)
        + f" (medians); one load's CPU: {results[CPU].median * 1e9:.2f} s/GB"
    )
    return results


class Readers:
    """`count` reader processes, each with a buffer of `size` bytes, ready to load."""

    def __init__(self, count: int, size: int) -> None:
        self.count, self.size = count, size
        self.processes: list[subprocess.Popen] = []
        self.errors: list = []

    def __enter__(self) -> "Readers":
        try:
            for _ in range(self.count):
                errors = tempfile.TemporaryFile()
                self.errors.append(errors)
                command = [sys.executable, "-m", __name__, str(self.size)]
                self.processes.append(
                    subprocess.Popen(
                        command,
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        stderr=errors,
                        text=True,
                    )
                )
            for number in range(self.count):
                if self._line(number) != READY:
                    raise RuntimeError(f"a disk reader did not start: {self._last(number)}")
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *_: object) -> None:
        for process in self.processes:
            process.stdin.close()  # the reader's loop ends at end of input
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            process.stdout.close()
        for errors in self.errors:
            errors.close()

    def together(self, command: str, paths: list[Path]) -> tuple[float, float]:
        """Seconds from the first reader's start to the last one's end, each reader doing
        `command` on a path of `paths`, and the CPU-seconds they took together."""
        stamps = self.stamps(command, paths)
        took = max(end for _, end, _ in stamps) - min(start for start, _, _ in stamps)
        return took, sum(cpu_s for _, _, cpu_s in stamps)

    def stamps(self, command: str, paths: list[Path]) -> list[tuple[float, float, float]]:
        """Each reader's start and end on the monotonic clock and CPU-seconds, each doing
        `command` on a path of `paths` at once."""
        for process, path in zip(self.processes, paths, strict=False):
            process.stdin.write(f"{command} {path}\n")
            process.stdin.flush()
        stamps = []
        for number in range(len(paths)):
            try:
                start, end, cpu_s = map(float, self._line(number).split())
            except ValueError:
                raise RuntimeError(f"a disk reader failed: {self._last(number)}") from None
            stamps.append((start, end, cpu_s))
        return stamps

    def _line(self, number: int) -> str:
        return self.processes[number].stdout.readline().strip()

    def _last(self, number: int) -> str:
        errors = self.errors[number]
        errors.seek(0)
        lines = errors.read().decode(errors="replace").strip().splitlines()
        return lines[-1] if lines else "no output"


def main(argv: list[str]) -> None:
    """The reader process: per input line `load CHECKPOINT` (the loader, O_DIRECT, into a
    new file on /dev/shm, removed after) or `raw BLOB` (a raw O_DIRECT read in the
    loader's geometry into a pre-faulted buffer: the device's bound), each answered with
    its start and end on the monotonic clock and the CPU-seconds it took."""
    warnings.simplefilter("error", DirectIOFallback)
    size, buffers = int(argv[0]), []  # the raw reads' buffer, made at the first of them
    shm = SHM if SHM.is_dir() else None
    with tempfile.TemporaryDirectory(prefix="thaw-reader-", dir=shm) as scratch:
        target = Path(scratch) / BLOB_NAME if shm else None
        print(READY, flush=True)
        for line in sys.stdin:
            command, _, path = line.rstrip("\n").partition(" ")
            if command != LOAD_COMMAND and not buffers:
                buffers.append(host_buffer(size))  # only the reader that reads raw has one
            out = buffers[0] if buffers else None
            print(" ".join(map(str, _timed(command, Path(path), out, target))), flush=True)


def _timed(
    command: str, path: Path, out: torch.Tensor | None, target: Path | None
) -> tuple[float, ...]:
    """(start, end, CPU-seconds) of one command; a load goes into a new file at `target`
    (fresh anonymous memory if None), removed after, untimed; a raw read into `out`."""
    cpu_before, started = time.process_time(), time.monotonic()
    if command == LOAD_COMMAND:
        into = None if target is None else file_buffer(target, buffer_bytes(path))
        weights = load(path, "cpu", out=into, mode="direct")
        ended, cpu_s = time.monotonic(), time.process_time() - cpu_before
        # Freeing the copy is not the load's: an instance's DRAM copy is freed when the
        # cache evicts it; counted in, it added about 15% on the project's VM (load_pairs.py).
        del weights, into
        if target is not None:
            target.unlink()
        return started, ended, cpu_s
    # The read alone: its descriptors' opening is not timed, as in `raw_read`.
    took = raw_read(path, out, DEFAULT_CHUNK_BYTES["direct"], DEFAULT_THREADS)
    ended = time.monotonic()
    return ended - took, ended, time.process_time() - cpu_before


if __name__ == "__main__":
    main(sys.argv[1:])
