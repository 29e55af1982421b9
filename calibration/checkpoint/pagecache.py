"""What of a file the page cache holds, and evicting it, without root.

`evict` is how a measurement makes a load cold; `resident_fraction` (mincore(2)) checks
that it worked, and lets `load` choose between O_DIRECT (cold) and buffered reads
(warm). `make_cold` and `make_warm` do both and insist. Eviction is guest-side only: a
host cache behind a virtual disk may survive it.
"""

import ctypes
import mmap
import os

import numpy as np

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [
    ctypes.c_void_p,
    ctypes.c_size_t,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_long,
]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
_MAP_FAILED = ctypes.c_void_p(-1).value


def evict(path: str) -> None:
    """Drop the file's pages from the page cache (dirty pages are written back first)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


class PageCacheError(RuntimeError):
    """A file would not leave, or would not stay in, the page cache."""


def make_cold(path: str) -> float:
    """Evict `path`; the fraction of it still cached (checked to be about none)."""
    evict(path)
    fraction = resident_fraction(path)
    if fraction > 0.01:
        raise PageCacheError(f"{path}: {fraction:.0%} still in the page cache after eviction")
    return fraction


def make_warm(path: str, tries: int = 5) -> float:
    """Read `path` into the page cache; the fraction cached (checked to be about all).

    Several tries: this VM runs a DAMON "pageout" scheme that reclaims pages it sees as
    idle, up to 128 MiB/s, so a file can lose pages while it is being read.
    """
    for _ in range(tries):
        with open(path, "rb", buffering=0) as handle:
            while handle.read(64 * 2**20):
                pass
        fraction = resident_fraction(path)
        if fraction >= 0.99:
            return fraction
    raise PageCacheError(f"{path}: does not stay in the page cache ({fraction:.0%} after reading)")


def resident_fraction(path: str, samples: int | None = None) -> float:
    """The fraction of the file's pages in the page cache, 0.0 to 1.0.

    Every page by default (about 20 ms per GiB: the benchmark's check); with `samples`,
    that many evenly spaced pages only (well under a millisecond: `load`'s choice).
    """
    size = os.path.getsize(path)
    if size == 0:
        return 1.0
    fd = os.open(path, os.O_RDONLY)
    try:
        address = _libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    finally:
        os.close(fd)
    if address == _MAP_FAILED:
        raise OSError(ctypes.get_errno(), f"mmap of {path} failed")
    try:
        pages = -(-size // mmap.PAGESIZE)
        if samples is None or samples >= pages:
            return _resident_pages(address, size) / pages
        step = pages // samples
        hits = sum(_resident_pages(address + k * step * mmap.PAGESIZE, 1) for k in range(samples))
        return hits / samples
    finally:
        _libc.munmap(address, size)


def _resident_pages(address: int, size: int) -> int:
    vector = ctypes.create_string_buffer(-(-size // mmap.PAGESIZE))
    if _libc.mincore(address, size, vector) != 0:
        raise OSError(ctypes.get_errno(), "mincore failed")
    return int(np.count_nonzero(np.frombuffer(vector.raw, dtype=np.uint8) & 1))
