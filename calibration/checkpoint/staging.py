"""The staged path to a GPU: readers fill a bounded ring of pinned slabs, a copier drains it.

Reader threads take a free slab, read the next slab-sized region of the blob into it
(O_DIRECT needs the slab BLOCK-aligned; DMA to the GPU needs it pinned), sum its tensor
pieces and hand it over. The copier (the calling thread) starts an asynchronous copy to
the device on its own stream, records an event, and returns the slab to the free list
once the event has fired. Readers wait for free slabs, so host memory stays at
`depth * slab_bytes` whatever the model size. The slabs are allocated once and kept
(pinning memory is slow, as a real checkpoint store knows), one ring per geometry.

With a CPU destination the same pipeline runs with plain buffers and synchronous copies;
`load` never takes it for the CPU (it reads straight into the destination), but the
tests drive it that way on machines without a GPU.
"""

import functools
import itertools
import queue
import threading
from collections import deque
from pathlib import Path

import torch

from calibration.checkpoint.buffers import aligned_pinned, host_buffer
from calibration.checkpoint.direct_io import BLOCK, read_fully, round_up
from calibration.checkpoint.format import Index
from calibration.checkpoint.plan import Region, add_piece_sums, check_read, plan_regions

# Not yet measured on a GPU: two slabs in flight per reader thread, each a few requests.
SLAB_BYTES = 32 * 2**20
RING_DEPTH = 4


class StagingRing:
    """`depth` BLOCK-aligned host slabs of `slab_bytes`, pinned when they feed a GPU."""

    def __init__(self, slab_bytes: int, depth: int, pinned: bool) -> None:
        allocate = aligned_pinned if pinned else host_buffer
        self.slabs = [allocate(slab_bytes) for _ in range(depth)]
        self.lock = threading.Lock()  # one load at a time per ring


@functools.lru_cache(maxsize=4)
def shared_ring(slab_bytes: int, depth: int, pinned: bool) -> StagingRing:
    return StagingRing(slab_bytes, depth, pinned)


def stream_staged(
    blob: Path,
    dest: torch.Tensor,
    index: Index,
    fds: list[int],
    chunk: int,
    slab_bytes: int | None = None,
    depth: int | None = None,
) -> list[dict[int, int]]:
    """Stream the blob into `dest` through the shared ring; per reader, its piece sums."""
    slab_bytes = slab_bytes or SLAB_BYTES
    depth = depth or RING_DEPTH
    if slab_bytes % BLOCK or depth < 1:
        raise ValueError(f"slab_bytes must be a multiple of {BLOCK} and ring_depth >= 1")
    ring = shared_ring(slab_bytes, depth, dest.is_cuda)
    with ring.lock:
        return _pipeline(blob, dest, plan_regions(index, slab_bytes), fds, chunk, ring)


def _pipeline(
    blob: Path,
    dest: torch.Tensor,
    regions: list[Region],
    fds: list[int],
    chunk: int,
    ring: StagingRing,
) -> list[dict[int, int]]:
    free: queue.Queue[torch.Tensor | None] = queue.Queue()
    for slab in ring.slabs:
        free.put(slab)
    filled: queue.Queue[tuple[Region, torch.Tensor] | BaseException] = queue.Queue()
    claim = itertools.count()
    stop = threading.Event()
    partials: list[dict[int, int]] = [{} for _ in fds]

    def reader(fd: int, sums: dict[int, int]) -> None:
        try:
            while (slab := free.get()) is not None and not stop.is_set():
                position = next(claim)
                if position >= len(regions):
                    free.put(slab)
                    return
                region = regions[position]
                view = memoryview(slab.numpy())[: round_up(region.length, BLOCK)]
                check_read(blob, region, read_fully(fd, view, region.offset, chunk))
                add_piece_sums(sums, view, region, region.offset)
                filled.put((region, slab))
        except BaseException as err:
            filled.put(err)

    threads = [
        threading.Thread(target=reader, args=(fd, sums), name="thaw-reader", daemon=True)
        for fd, sums in zip(fds, partials, strict=True)
    ]
    copies = _Copies(dest)
    for thread in threads:
        thread.start()
    try:
        for _ in regions:
            item = filled.get()
            if isinstance(item, BaseException):
                raise item
            region, slab = item
            copies.start(dest[region.offset : region.offset + region.length], slab, region.length)
            for done in copies.finished(wait_for_one=free.empty()):
                free.put(done)
    finally:
        copies.wait_all()  # also after a failure: the next load reuses these slabs
        stop.set()
        for _ in threads:
            free.put(None)
        for thread in threads:
            thread.join()
    return partials


class _Copies:
    """Slab-to-destination copies in flight, each until its CUDA event has fired."""

    def __init__(self, dest: torch.Tensor) -> None:
        self.stream = torch.cuda.Stream(dest.device) if dest.is_cuda else None
        if self.stream is not None:
            self.stream.wait_stream(torch.cuda.current_stream(dest.device))  # dest allocated
        self.pending: deque[tuple[torch.cuda.Event | None, torch.Tensor]] = deque()

    def start(self, target: torch.Tensor, slab: torch.Tensor, length: int) -> None:
        if self.stream is None:
            target.copy_(slab[:length])
            self.pending.append((None, slab))
            return
        with torch.cuda.stream(self.stream):
            target.copy_(slab[:length], non_blocking=True)
            event = torch.cuda.Event()
            event.record(self.stream)
        self.pending.append((event, slab))

    def finished(self, wait_for_one: bool) -> list[torch.Tensor]:
        """Slabs whose copies are done; if `wait_for_one`, wait for the oldest at least."""
        done = []
        while self.pending:
            event = self.pending[0][0]
            if event is not None and not event.query():
                if done or not wait_for_one:
                    break
                event.synchronize()
            done.append(self.pending.popleft()[1])
        return done

    def wait_all(self) -> None:
        if self.stream is not None:
            self.stream.synchronize()
        self.pending.clear()
