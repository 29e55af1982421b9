"""O_DIRECT plumbing: opening with a fallback, and reads that finish.

O_DIRECT moves bytes from the device straight into our buffer (no page-cache copy, no
cache pollution), but wants the buffer address, file offset and length aligned to the
device's logical block; 4 KiB satisfies every device we know. Some filesystems (tmpfs,
some overlays) refuse it; `open_direct` says why so the caller can fall back.
"""

import mmap
import os

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
