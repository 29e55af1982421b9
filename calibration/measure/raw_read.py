"""The raw device: an O_DIRECT read of a file with no loader around it, the physical limit.

Loaders are judged against it (`benchmarks/loader.py`), and `calibration.measure` keeps
it beside the loader's figure in the profile. The caller passes a pre-faulted, aligned
buffer (`calibration.checkpoint.buffers.host_buffer`), so that page faults are not timed.
"""

import itertools
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch

from calibration.checkpoint.direct_io import open_direct, read_fully


class DirectIORefused(OSError):
    """The file's filesystem refuses O_DIRECT (tmpfs, some overlays): no raw device to read."""


def raw_read(path: Path, buffer: torch.Tensor, chunk: int, threads: int) -> float:
    """Seconds to read `path` with O_DIRECT: `threads` threads, `chunk`-byte requests."""
    size = os.path.getsize(path)
    view = memoryview(buffer.numpy())
    descriptors = []
    try:
        for _ in range(threads):
            fd, refusal = open_direct(str(path))
            if fd is None:
                raise DirectIORefused(f"{path}: O_DIRECT refused ({refusal})")
            descriptors.append(fd)
        claim = itertools.count()

        def worker(fd: int) -> None:
            while (offset := next(claim) * chunk) < size:
                read_fully(fd, view[offset : offset + chunk], offset, chunk)

        started = time.perf_counter()
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(worker, descriptors))
        return time.perf_counter() - started
    finally:
        for fd in descriptors:
            os.close(fd)
