"""O_DIRECT plumbing: opening with a fallback, aligned buffers, and reads that finish.

O_DIRECT moves bytes from the device straight into our buffer (no page-cache copy, no
cache pollution), but wants the buffer address, file offset and length aligned to the
device's logical block; 4 KiB satisfies every device we know. Some filesystems (tmpfs,
some overlays) refuse it; `open_direct` says why so the caller can fall back.
"""

import mmap
import os

import torch

BLOCK = 4096


def round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def open_direct(path: str) -> tuple[int | None, str | None]:
    """An O_DIRECT descriptor for `path`, or None and the reason it was refused."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    except OSError as err:
        return None, err.strerror
    probe = mmap.mmap(-1, BLOCK)
    try:
        os.preadv(fd, [probe], 0)  # some filesystems accept the flag and refuse the read
    except OSError as err:
        os.close(fd)
        return None, err.strerror
    finally:
        probe.close()
    return fd, None


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


def read_fully(fd: int, view: memoryview, offset: int, request: int) -> int:
    """Read into all of `view` from `offset` in requests of at most `request` bytes.

    Returns the bytes read: fewer than `len(view)` only at the end of the file.
    """
    done = 0
    while done < len(view):
        got = os.preadv(fd, [view[done : done + request]], offset + done)
        if got == 0:
            break
        done += got
    return done
