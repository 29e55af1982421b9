"""`calibration.load`: stream a checkpoint into one device buffer and hand out views of it.

Read the index, allocate (or reuse) one buffer for the whole blob, stream the blob into
it with a pool of reader threads, each with its own descriptor, then build one view per
tensor: no per-tensor allocation or copy. On the CPU the threads read straight into the
destination; for a GPU they read into a ring of pinned staging slabs that a copier
drains (`calibration.staging`). Each thread sums the bytes it read (`sum64`), so every
tensor is checked before any view is made: a corrupted checkpoint raises
`CheckpointError`, never returns garbage.

Cold files (mostly not in the page cache) are read with O_DIRECT: large aligned
requests, no page-cache copy. Warm files are read through the page cache, which is then
a memory copy. Where O_DIRECT is refused, reads fall back to the page cache with a
`DirectIOFallback` warning.
"""

import itertools
import os
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch

from calibration.buffers import host_buffer
from calibration.checksum import MASK64
from calibration.direct_io import BLOCK, open_direct, read_fully, round_up
from calibration.format import BLOB_NAME, CheckpointError, Index, check_blob_size, read_index
from calibration.pagecache import resident_fraction
from calibration.plan import Region, add_piece_sums, check_read, plan_regions
from calibration.staging import stream_staged

# Measured with benchmarks/loader.py's sweeps on the project's 2-core VM (1 GiB, medians):
# O_DIRECT went fastest with four requests of 4-64 MiB in flight (16 MiB x 4 threads:
# 1.59 GB/s against 1.43 with two threads and 1.24 with one), page-cache copies with 1-4
# MiB requests (smaller ones pay per-call overhead; the thread count mattered little).
DEFAULT_THREADS = 4
DIRECT_CHUNK_BYTES = 16 * 2**20
BUFFERED_CHUNK_BYTES = 4 * 2**20
# A file at least this resident in the page cache is read through it; a sample of its
# pages tells (checking every page took 2-4% of a cold load).
WARM_FRACTION = 0.5
RESIDENCY_SAMPLES = 256


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

    mode: "direct" (O_DIRECT), "buffered" (page cache) or "auto" (buffered if the blob is
    mostly cached already). chunk_bytes: size of each read request (default by mode).
    slab_bytes, ring_depth: the GPU staging ring (see `calibration.staging`). out: a
    uint8 buffer on `device` of at least `buffer_bytes(path)`, reused instead of
    allocating one (a checkpoint store keeps such buffers; on the CPU a fresh one costs
    page faults); the returned tensors are views into it.
    """
    checkpoint = Path(path)
    index = read_index(checkpoint)
    blob = checkpoint / BLOB_NAME
    device = torch.device(device)
    direct = choose_direct(blob, mode)
    chunk = chunk_bytes or (DIRECT_CHUNK_BYTES if direct else BUFFERED_CHUNK_BYTES)
    if chunk % BLOCK or threads < 1:
        raise ValueError(f"chunk_bytes must be a multiple of {BLOCK} and threads >= 1")
    dtypes = _torch_dtypes(blob, index)
    fds = _open(blob, index, threads, direct)
    try:
        buffer = _destination(index, device, out)
        if device.type == "cpu":
            sums = _read_into(blob, buffer, plan_regions(index, chunk), fds, chunk)
        else:
            sums = stream_staged(blob, buffer, index, fds, chunk, slab_bytes, ring_depth)
    finally:
        for fd in fds:
            os.close(fd)
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


def choose_direct(blob: Path, mode: str) -> bool:
    """Whether `load` reads `blob` with O_DIRECT in this `mode` (before any fallback)."""
    if mode not in ("auto", "direct", "buffered"):
        raise ValueError(f"mode must be 'auto', 'direct' or 'buffered', not {mode!r}")
    if mode == "auto":
        try:
            return resident_fraction(str(blob), RESIDENCY_SAMPLES) < WARM_FRACTION
        except OSError as err:
            raise CheckpointError(f"{blob}: cannot open: {err.strerror}") from None
    return mode == "direct"


def _torch_dtypes(blob: Path, index: Index) -> dict[str, torch.dtype]:
    dtypes = {}
    for entry in index.tensors:
        dtype = getattr(torch, entry.dtype, None)
        if not isinstance(dtype, torch.dtype):
            raise CheckpointError(f"{blob}: dtype {entry.dtype} is not in this torch build")
        dtypes[entry.dtype] = dtype
    return dtypes


def _destination(index: Index, device: torch.device, out: torch.Tensor | None) -> torch.Tensor:
    size = round_up(index.total_bytes, BLOCK)
    if out is None:
        if device.type == "cpu":
            return host_buffer(size, prefault=False)
        return torch.empty(size, dtype=torch.uint8, device=device)
    if out.dtype != torch.uint8 or out.dim() != 1 or out.numel() < size:
        raise ValueError(f"out must be a 1-D uint8 tensor of at least {size} bytes")
    if out.device.type != device.type or (device.index is not None and out.device != device):
        raise ValueError(f"out is on {out.device}, not {device}")
    if device.type == "cpu" and (out.data_ptr() % BLOCK or not out.is_contiguous()):
        raise ValueError(f"out must be contiguous and {BLOCK}-byte aligned")
    return out


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


def _read_into(
    blob: Path, buffer: torch.Tensor, regions: list[Region], fds: list[int], chunk: int
) -> list[dict[int, int]]:
    """Read every region straight into `buffer`; per thread, the sums of its tensor pieces."""
    view = memoryview(buffer.numpy())
    claim = itertools.count()
    failed = threading.Event()

    def worker(fd: int) -> dict[int, int]:
        sums: dict[int, int] = {}
        try:
            while not failed.is_set() and (position := next(claim)) < len(regions):
                region = regions[position]
                span = view[region.offset : region.offset + round_up(region.length, BLOCK)]
                check_read(blob, region, read_fully(fd, span, region.offset, chunk))
                add_piece_sums(sums, view, region, 0)
        except BaseException:
            failed.set()
            raise
        return sums

    with ThreadPoolExecutor(len(fds), thread_name_prefix="thaw-reader") as pool:
        futures = [pool.submit(worker, fd) for fd in fds]
        return [future.result() for future in futures]


def _check_sums(blob: Path, index: Index, partials: list[dict[int, int]]) -> None:
    totals = [0] * len(index.tensors)
    for sums in partials:
        for position, value in sums.items():
            totals[position] += value
    for entry, total in zip(index.tensors, totals, strict=True):
        if total & MASK64 != entry.sum64:
            raise CheckpointError(f"{blob}: tensor {entry.name!r} is corrupted (checksum)")
