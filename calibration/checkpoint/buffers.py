"""Host buffers the loader reads into: page-aligned for O_DIRECT, pinned for GPU copies,
or a file's memory (a DRAM cache on /dev/shm)."""

import mmap
from pathlib import Path

import torch

from calibration.checkpoint.direct_io import BLOCK, round_up


def host_buffer(nbytes: int, prefault: bool = True) -> torch.Tensor:
    """A page-aligned uint8 CPU tensor of `nbytes` (rounded up to BLOCK).

    First-touch page faults cost about as much as reading the same bytes from disk on a
    small VM (0.4 s per GiB here), which is why callers that load repeatedly pass a reused,
    pre-faulted buffer to `load`. For a one-off load, not pre-faulting measured faster:
    the faults then overlap with the other thread's reads. Huge pages are not requested:
    the compaction they triggered here made allocation several times slower.
    """
    size = round_up(max(nbytes, 1), BLOCK)
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | (mmap.MAP_POPULATE if prefault else 0)
    region = mmap.mmap(-1, size, flags=flags)
    return torch.frombuffer(region, dtype=torch.uint8)  # keeps `region` alive


def aligned_pinned(nbytes: int) -> torch.Tensor:
    """A BLOCK-aligned slice of pinned host memory, for O_DIRECT reads that feed the GPU."""
    raw = torch.empty(nbytes + BLOCK, dtype=torch.uint8, pin_memory=True)
    skip = -raw.data_ptr() % BLOCK
    return raw[skip : skip + nbytes]


def file_buffer(path: Path, nbytes: int) -> torch.Tensor:
    """A uint8 tensor whose memory is the new file `path` of `nbytes` (on /dev/shm: a
    checkpoint installed in a DRAM cache as it is read). Page-aligned, as mmap is."""
    with open(path, "w+b") as handle:
        handle.truncate(nbytes)
        region = mmap.mmap(handle.fileno(), nbytes)
    return torch.frombuffer(region, dtype=torch.uint8)  # keeps `region` alive
