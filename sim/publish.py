"""Putting a finished directory in place atomically: the last step of every writer that
must never leave a half-written result (run directories, checkpoints)."""

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def fsync_directory(path: Path) -> None:
    """Make a directory's entries durable (a rename is not, until its parent is synced)."""
    handle = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


def publish_directory(staging: Path, dst: Path) -> None:
    """Rename the finished `staging` directory to `dst`, moving an old `dst` aside first
    and deleting it only once the new one is in place."""
    if dst.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{dst.name}.old-", dir=dst.parent))
        os.replace(dst, old / dst.name)
        os.replace(staging, dst)
        shutil.rmtree(old)
    else:
        os.replace(staging, dst)
    fsync_directory(dst.parent)


@contextmanager
def staged_directory(dst: Path) -> Iterator[Path]:
    """A hidden directory beside `dst` to fill; once the block ends, its files are synced
    and it becomes `dst`. If the block fails, it is removed and `dst` is untouched."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{dst.name}.tmp-", dir=dst.parent))
    try:
        yield staging
        for name in os.listdir(staging):
            with open(staging / name, "rb") as handle:
                os.fsync(handle.fileno())
        fsync_directory(staging)
        publish_directory(staging, dst)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
