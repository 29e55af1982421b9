"""Putting a finished directory or file in place atomically: the last step of every
writer that must never leave a half-written result (run directories, checkpoints,
sweep tables, hardware profiles)."""

import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
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


def write_file_atomically(path: Path, write: Callable[[Path], None]) -> None:
    """`write` a staging file beside `path` (with the umask's permissions, unlike
    mkstemp's 0600), sync it, then rename it into place."""
    staging = path.parent / f".{path.name}.tmp-{uuid.uuid4().hex[:12]}"
    try:
        write(staging)
        with open(staging, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(staging, path)
    except BaseException:
        staging.unlink(missing_ok=True)
        raise
    fsync_directory(path.parent)
