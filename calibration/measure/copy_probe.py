"""Host-memory-to-device copy bandwidth: what a checkpoint held in DRAM costs to move.

A DRAM-cache load is a copy from host memory to the device. Measured four ways, since
each is a design choice a loader makes: from pageable or pinned host memory (pinned
lets the GPU's DMA engine read it directly; on a CPU device there is no such thing),
and as one copy of the whole buffer or one per tensor (many small copies pay a fixed
cost each). On the CPU device "the device" is host memory too: a memory copy, which
also bounds what any disk read into memory can reach.
"""

import itertools
from collections.abc import Callable, Sequence

import torch

from calibration.checkpoint.buffers import aligned_pinned, host_buffer
from calibration.measure.measurement import Measurement, seconds


def measure_copies(device: str, tensor_bytes: Sequence[int], runs: int) -> dict[str, Measurement]:
    """`dram_to_device_{pageable,pinned}_{one_copy,per_tensor}` in bytes/s, over a buffer
    as large as the tensors of `tensor_bytes` together. Pinned only on a GPU."""
    nbytes = sum(tensor_bytes)
    sources = {"pageable": host_buffer(nbytes)}
    if device != "cpu":
        sources["pinned"] = aligned_pinned(nbytes)
        sources["pinned"].copy_(sources["pageable"])
    destination = (
        host_buffer(nbytes)
        if device == "cpu"
        else torch.empty(nbytes, dtype=torch.uint8, device=device)
    )
    ranges = _ranges(tensor_bytes)
    samples: dict[str, list[float]] = {}
    for _, (memory, source), (style, pieces) in itertools.product(
        range(runs), sources.items(), {"one_copy": [(0, nbytes)], "per_tensor": ranges}.items()
    ):
        copy = _copier(source, destination, pieces, device)
        total = sum(size for _, size in pieces)
        samples.setdefault(f"dram_to_device_{memory}_{style}", []).append(total / seconds(copy))
    return {key: Measurement(tuple(rates), "bytes/s", False) for key, rates in samples.items()}


def _ranges(tensor_bytes: Sequence[int]) -> list[tuple[int, int]]:
    """Back-to-back (offset, size) pieces of the given sizes."""
    offsets = itertools.accumulate(tensor_bytes, initial=0)
    return list(zip(offsets, tensor_bytes, strict=False))  # the last offset, the end, unused


def _copier(
    source: torch.Tensor, destination: torch.Tensor, pieces: list[tuple[int, int]], device: str
) -> Callable[[], None]:
    asynchronous = source.is_pinned()

    def copy() -> None:
        for offset, size in pieces:
            destination[offset : offset + size].copy_(
                source[offset : offset + size], non_blocking=asynchronous
            )
        if device != "cpu":
            torch.cuda.synchronize()

    return copy
