"""Cut a checkpoint's blob into regions to read, and say which tensor bytes each holds.

A region is the unit one reader thread reads (and, on the staged path, one staging
slab). Because `sum64` is additive, each region carries the pieces of tensors it covers
so that the thread that read it can sum them at once, while they are still in cache.
"""

from dataclasses import dataclass
from pathlib import Path

from calibration.checkpoint.checksum import sum64
from calibration.checkpoint.format import CheckpointError, Index


@dataclass(frozen=True)
class Region:
    offset: int
    length: int
    pieces: tuple[tuple[int, int, int], ...]  # (tensor position in the index, start, end)


def plan_regions(index: Index, region_bytes: int) -> list[Region]:
    """Consecutive regions of `region_bytes` (the last one shorter) covering the blob."""
    regions = []
    tensors = index.tensors
    first = 0  # the first tensor that may still reach into the next region
    for start in range(0, index.total_bytes, region_bytes):
        end = min(start + region_bytes, index.total_bytes)
        pieces = []
        position = first
        while position < len(tensors) and tensors[position].offset < end:
            entry = tensors[position]
            low, high = max(start, entry.offset), min(end, entry.offset + entry.summed_bytes)
            if low < high:
                pieces.append((position, low, high))
            if entry.offset + entry.summed_bytes <= end:
                first = position + 1
            position += 1
        regions.append(Region(start, end - start, tuple(pieces)))
    return regions


def check_read(blob: Path, region: Region, got: int) -> None:
    if got < region.length:
        raise CheckpointError(f"{blob}: ended at byte {region.offset + got} while being read")


def add_piece_sums(sums: dict[int, int], data: memoryview, region: Region, base: int) -> None:
    """Add the word sums of `region`'s tensor pieces, found in `data` at offset - `base`."""
    for position, start, end in region.pieces:
        sums[position] = sums.get(position, 0) + sum64(data[start - base : end - base])
