"""`calibration.load`: stream a checkpoint into one device buffer and hand out views of it.

Read the index, allocate (or reuse) one buffer for the whole blob, stream the blob into
it with a pool of reader threads, each with its own descriptor, then build one view per
tensor: no per-tensor allocation or copy. On the CPU the threads read straight into the
destination; for a GPU they read into a ring of pinned staging slabs that a copier
drains (`calibration.checkpoint.staging`). Each thread sums the bytes it read (`sum64`), so every
tensor is checked before any view is made: a corrupted checkpoint raises
`CheckpointError`, never returns garbage.

Cold files (mostly not in the page cache) are read with O_DIRECT: large aligned
requests, no page-cache copy. A warm file bound for the CPU is mapped instead of read
(`calibration.checkpoint.mapped`): the buffer is the page cache itself, and the threads' checksum
pass is the first touch of it. A warm file bound for a GPU is read through the page
cache. Where O_DIRECT is refused, reads fall back to the page cache with a
`DirectIOFallback` warning.
"""

import itertools
import os
import threading
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch

from calibration.checkpoint.buffers import host_buffer
from calibration.checkpoint.checksum import MASK64
from calibration.checkpoint.direct_io import BLOCK, open_direct, read_fully, round_up
from calibration.checkpoint.format import (
    BLOB_NAME,
    CheckpointError,
    Index,
    check_blob_size,
    read_index,
)
from calibration.checkpoint.mapped import map_blob
from calibration.checkpoint.pagecache import resident_fraction
from calibration.checkpoint.plan import Region, add_piece_sums, check_read, plan_regions
from calibration.checkpoint.staging import stream_staged

# Measured on the project's 2-core VM (1 GiB, medians; the VM is shared, so noisy):
# O_DIRECT reaches the disk's plateau with two to four requests of 4-64 MiB in flight;
# four threads keep it there while one of them sums what it read (16 MiB x 4: 1.37 GB/s,
# raw O_DIRECT of the same geometry 1.40, ten interleaved runs; eight threads did no
# better). Summing a mapped file, the VM quiet: 16 MiB regions on two to four threads,
# 19-20 GB/s against 13-15 on one, 4 MiB ones 15-18 (under load the benchmark's sweeps
# could not tell 1, 4 and 16 MiB apart). Page-cache copies (a GPU's warm path) with 1-4
# MiB requests (smaller ones pay per-call overhead).
DEFAULT_THREADS = 4
DEFAULT_CHUNK_BYTES = {"direct": 16 * 2**20, "buffered": 4 * 2**20, "map": 16 * 2**20}
MODES = ("auto", "direct", "buffered", "map")
# A file at least this resident in the page cache is mapped (CPU) or read through it
# (GPU); a sample of its pages tells (checking every page took 2-4% of a cold load).
WARM_FRACTION = 0.5
RESIDENCY_SAMPLES = 256

Sums = list[dict[int, int]]  # per thread: tensor position -> sum64 of the pieces it read


class DirectIOFallback(UserWarning):
    """O_DIRECT was refused for a file; it is read through the page cache instead."""


def load(
    path: str | Path,
    device: str | torch.device = "cpu",
    *,
    mode: str = "auto",
    threads: int = DEFAULT_THREADS,
    chunk_bytes: int | None = None,
    slab_bytes: int | None = None,
    ring_depth: int | None = None,
    out: torch.Tensor | None = None,
) -> dict[str, torch.Tensor]:
    """Load the checkpoint directory `path` onto `device`: a dict of views, in blob order.

    mode: "direct" (O_DIRECT), "buffered" (read through the page cache), "map" (CPU
    only: views of a copy-on-write mapping of the cached file, see `calibration.checkpoint.mapped`)
    or "auto": a blob mostly in the page cache is mapped on the CPU and read buffered for
    a GPU, any other is read with O_DIRECT. threads: reader threads, or summing threads
    for a mapping. chunk_bytes: the size of each read request, or of each region summed
    in a mapping (default by mode). slab_bytes, ring_depth: the
    GPU staging ring (see `calibration.checkpoint.staging`). out: a uint8 buffer on `device` of at
    least `buffer_bytes(path)` for the blob to be read into, instead of allocating one
    (a checkpoint store keeps such buffers; on the CPU a fresh one costs page faults).
    Whenever the blob is read, the tensors are views into `out`; a mapped load leaves it
    alone (mode="buffered" copies a cached file into it instead).
    """
    checkpoint = Path(path)
    index = read_index(checkpoint)
    blob = checkpoint / BLOB_NAME
    device = torch.device(device)
    if out is not None:
        _check_out(out, index, device)
    how = choose_mode(blob, mode, device)
    chunk = chunk_bytes or DEFAULT_CHUNK_BYTES[how]
    if chunk % BLOCK or threads < 1:
        raise ValueError(f"chunk_bytes must be a multiple of {BLOCK} and threads >= 1")
    dtypes = _torch_dtypes(blob, index)
    if how == "map":
        buffer, sums = _map(blob, index, threads, chunk)
    else:
        ring = (slab_bytes, ring_depth)
        buffer, sums = _read(blob, index, device, out, how == "direct", threads, chunk, ring)
    _check_sums(blob, index, sums)
    return {
        entry.name: buffer[entry.offset : entry.offset + entry.nbytes]
        .view(dtypes[entry.dtype])
        .view(entry.shape)
        for entry in index.tensors
    }


def buffer_bytes(path: str | Path) -> int:
    """The size of the buffer `load` needs for the checkpoint at `path` (for `out=`)."""
    return round_up(read_index(Path(path)).total_bytes, BLOCK)


def choose_mode(blob: Path, mode: str, device: torch.device) -> str:
    """How `load` reads `blob` onto `device` in `mode`: "direct", "buffered" or "map"."""
    if _known(mode) == "map" and device.type != "cpu":
        raise ValueError(f"mode 'map' is for the CPU, not {device}")
    if mode != "auto":
        return mode
    if choose_direct(blob, mode):
        return "direct"
    return "map" if device.type == "cpu" else "buffered"


def choose_direct(blob: Path, mode: str) -> bool:
    """Whether `load` reads `blob` with O_DIRECT in this `mode` (before any fallback)."""
    if _known(mode) == "auto":
        try:
            return resident_fraction(str(blob), RESIDENCY_SAMPLES) < WARM_FRACTION
        except OSError as err:
            raise CheckpointError(f"{blob}: cannot open: {err.strerror}") from None
    return mode == "direct"


def _known(mode: str) -> str:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(map(repr, MODES))}, not {mode!r}")
    return mode


def _torch_dtypes(blob: Path, index: Index) -> dict[str, torch.dtype]:
    dtypes = {}
    for entry in index.tensors:
        dtype = getattr(torch, entry.dtype, None)
        if not isinstance(dtype, torch.dtype):
            raise CheckpointError(f"{blob}: dtype {entry.dtype} is not in this torch build")
        dtypes[entry.dtype] = dtype
    return dtypes


def _fresh_buffer(index: Index, device: torch.device) -> torch.Tensor:
    size = round_up(index.total_bytes, BLOCK)
    if device.type == "cpu":
        return host_buffer(size, prefault=False)
    return torch.empty(size, dtype=torch.uint8, device=device)


def _check_out(out: torch.Tensor, index: Index, device: torch.device) -> None:
    size = round_up(index.total_bytes, BLOCK)
    if out.dtype != torch.uint8 or out.dim() != 1 or out.numel() < size:
        raise ValueError(f"out must be a 1-D uint8 tensor of at least {size} bytes")
    if out.device.type != device.type or (device.index is not None and out.device != device):
        raise ValueError(f"out is on {out.device}, not {device}")
    if device.type == "cpu" and (out.data_ptr() % BLOCK or not out.is_contiguous()):
        raise ValueError(f"out must be contiguous and {BLOCK}-byte aligned")


def _map(blob: Path, index: Index, threads: int, chunk: int) -> tuple[torch.Tensor, Sums]:
    """Map the blob and sum it in `chunk`-byte regions on `threads` threads."""
    check_blob_size(blob, index)
    buffer = map_blob(blob, index.total_bytes)
    view = memoryview(buffer.numpy())
    regions = plan_regions(index, chunk)
    return buffer, _parallel(
        threads, regions, lambda _, region, sums: add_piece_sums(sums, view, region, 0)
    )


def _read(
    blob: Path,
    index: Index,
    device: torch.device,
    out: torch.Tensor | None,
    direct: bool,
    threads: int,
    chunk: int,
    ring: tuple[int | None, int | None],
) -> tuple[torch.Tensor, Sums]:
    """Read the blob into `out` or a fresh buffer: straight on the CPU, through the
    staging ring for a GPU. The buffer, and per thread the sums of what it read."""
    fds = _open(blob, index, threads, direct)
    try:
        buffer = out if out is not None else _fresh_buffer(index, device)
        if device.type != "cpu":
            return buffer, stream_staged(blob, buffer, index, fds, chunk, *ring)
        view = memoryview(buffer.numpy())

        def step(worker: int, region: Region, sums: dict[int, int]) -> None:
            span = view[region.offset : region.offset + round_up(region.length, BLOCK)]
            check_read(blob, region, read_fully(fds[worker], span, region.offset, chunk))
            add_piece_sums(sums, view, region, 0)

        return buffer, _parallel(len(fds), plan_regions(index, chunk), step)
    finally:
        for fd in fds:
            os.close(fd)


def _open(blob: Path, index: Index, threads: int, direct: bool) -> list[int]:
    """One descriptor per reader thread, after checking the blob's size against the index."""
    check_blob_size(blob, index)
    fds: list[int] = []
    try:
        for _ in range(threads):
            fd, refusal = open_direct(str(blob)) if direct else (None, None)
            if direct and fd is None:
                warnings.warn(
                    f"{blob}: O_DIRECT refused ({refusal}); reading through the page cache",
                    DirectIOFallback,
                    stacklevel=3,
                )
                direct = False
            fds.append(fd if fd is not None else os.open(blob, os.O_RDONLY))
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return fds


def _parallel(
    workers: int, regions: list[Region], step: Callable[[int, Region, dict[int, int]], None]
) -> Sums:
    """Run `step(worker, region, sums)` for every region, each of `workers` threads taking
    the next region left; per thread, the piece sums its steps added. The first failure
    stops the others and is raised."""
    claim = itertools.count()
    failed = threading.Event()

    def worker(number: int) -> dict[int, int]:
        sums: dict[int, int] = {}
        try:
            while not failed.is_set() and (position := next(claim)) < len(regions):
                step(number, regions[position], sums)
        except BaseException:
            failed.set()
            raise
        return sums

    with ThreadPoolExecutor(workers, thread_name_prefix="thaw-reader") as pool:
        futures = [pool.submit(worker, number) for number in range(workers)]
        return [future.result() for future in futures]


def _check_sums(blob: Path, index: Index, partials: Sums) -> None:
    totals = [0] * len(index.tensors)
    for sums in partials:
        for position, value in sums.items():
            totals[position] += value
    for entry, total in zip(index.tensors, totals, strict=True):
        if total & MASK64 != entry.sum64:
            raise CheckpointError(f"{blob}: tensor {entry.name!r} is corrupted (checksum)")
