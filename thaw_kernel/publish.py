"""Putting a finished directory or file in place atomically: the last step of every
writer that must never leave a half-written result (run directories, reports,
checkpoints, sweep tables, hardware profiles).

A published directory carries a marker (`MARKER`) naming its kind and every file thaw
put in it. An existing directory is replaced only if it is empty or carries the marker
of the same kind and holds nothing else: a directory that merely looks like an earlier
output (a `summary.json` of the user's, a file added since) is refused, never deleted.
"""

import json
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from thaw_kernel.errors import InputError

MARKER = ".thaw-output"
# Names of the scratch entries the writers below make beside their target: a probe of the
# target's parent, a staging copy, an old copy moved aside. A process killed mid-write
# leaves them behind; `is_scratch` tells a caller that may clear them.
PROBE_PREFIX = ".thaw-probe-"
STAGING_INFIX = ".tmp-"
OLD_INFIX = ".old-"


def is_scratch(name: str) -> bool:
    """Whether `name` is one that thaw's own writers give a scratch entry."""
    return name.startswith(PROBE_PREFIX) or (
        name.startswith(".") and (STAGING_INFIX in name or OLD_INFIX in name)
    )


def fsync_directory(path: Path) -> None:
    """Make a directory's entries durable (a rename is not, until its parent is synced)."""
    handle = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


def _marker(path: Path) -> dict | None:
    """The marker thaw wrote in `path`, or None if there is none that parses."""
    try:
        with open(path / MARKER, "rb") as handle:
            marker = json.loads(handle.read(1 << 20))
    except (OSError, ValueError):
        return None
    if not isinstance(marker, dict) or not isinstance(marker.get("files"), list):
        return None
    return marker


def is_output(path: Path, kind: str) -> bool:
    """Whether `path` is a directory thaw published as a `kind` and that holds only what
    thaw put there (so replacing it destroys nothing of the user's)."""
    if path.is_symlink() or not path.is_dir():
        return False
    marker = _marker(path)
    if marker is None or marker.get("kind") != kind:
        return False
    return set(os.listdir(path)) <= {MARKER, *marker["files"]}


def replaceable(path: Path, kind: str) -> bool:
    """Whether a `kind` may be published at `path`: nothing there, an empty directory,
    or an earlier `kind` that thaw wrote."""
    if not os.path.lexists(path):
        return True
    if path.is_dir() and not path.is_symlink() and not os.listdir(path):
        return True
    return is_output(path, kind)


def check_replaceable(path: Path, kind: str, option: str) -> None:
    """Refuse, before any work, a `path` that holds something thaw did not write."""
    if not replaceable(path, kind):
        raise InputError(
            f"{path}: exists and is not a thaw {kind} directory (thaw replaces only what it "
            f"wrote, unchanged); choose another {option}"
        )
    parent = path.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"{path}: cannot be created ({parent} is not a writable directory)")
    # Permission bits do not tell (root passes them; /proc and full or odd filesystems
    # refuse anyway): creating a directory there does, before minutes of work are lost.
    probe = parent / f"{PROBE_PREFIX}{uuid.uuid4().hex[:12]}"
    try:
        probe.mkdir()
    except OSError as err:
        raise InputError(f"{path}: cannot be created in {parent}: {err.strerror}") from None
    probe.rmdir()


def write_marker(directory: Path, kind: str, files: list[str] | None = None) -> None:
    """Mark `directory` as a `kind` published by thaw, holding `files` (by default, the
    files it holds now)."""
    if files is None:
        files = [name for name in os.listdir(directory) if name != MARKER]
    marker = {"kind": kind, "files": sorted(files)}
    (directory / MARKER).write_text(json.dumps(marker) + "\n", encoding="utf-8")


def publish_directory(staging: Path, dst: Path) -> None:
    """Rename the finished `staging` directory to `dst`, moving an old `dst` aside first
    and deleting it only once the new one is in place."""
    if os.path.lexists(dst):
        old = dst.parent / f".{dst.name}{OLD_INFIX}{uuid.uuid4().hex[:12]}"
        old.mkdir()
        os.replace(dst, old / dst.name)
        os.replace(staging, dst)
        shutil.rmtree(old)
    else:
        os.replace(staging, dst)
    fsync_directory(dst.parent)


@contextmanager
def created_directories(path: Path) -> Iterator[None]:
    """Create the directory `path` and its missing parents for the block; if it fails,
    remove the ones it created (while empty), so a failure leaves no trace."""
    missing = []
    directory = path.absolute()
    while not os.path.lexists(directory):
        missing.append(directory)
        directory = directory.parent
    path.mkdir(parents=True, exist_ok=True)
    try:
        yield
    except BaseException:
        for directory in missing:  # deepest first
            try:
                directory.rmdir()
            except OSError:
                break
        raise


@contextmanager
def staged_directory(dst: Path, kind: str) -> Iterator[Path]:
    """A hidden directory beside `dst` to fill; once the block ends, its files are synced,
    it is marked as a `kind` and it becomes `dst`. If the block fails, it is removed and
    `dst` is untouched. `dst` must be `replaceable` (checked again before the rename)."""
    with created_directories(dst.parent):
        staging = dst.absolute().parent / f".{dst.name}{STAGING_INFIX}{uuid.uuid4().hex[:12]}"
        staging.mkdir()  # not mkdtemp: the result takes the umask's permissions, not 0700
        try:
            yield staging
            write_marker(staging, kind)
            for name in os.listdir(staging):
                if (staging / name).is_file():
                    with open(staging / name, "rb") as handle:
                        os.fsync(handle.fileno())
            fsync_directory(staging)
            if not replaceable(dst, kind):
                raise InputError(f"{dst}: appeared while being written; not replacing it")
            publish_directory(staging, dst)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise


def write_file_atomically(path: Path, write: Callable[[Path], None]) -> None:
    """`write` a staging file beside `path` (with the umask's permissions, unlike
    mkstemp's 0600), sync it, then rename it into place."""
    staging = path.parent / f".{path.name}{STAGING_INFIX}{uuid.uuid4().hex[:12]}"
    try:
        write(staging)
        with open(staging, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(staging, path)
    except BaseException:
        staging.unlink(missing_ok=True)
        raise
    fsync_directory(path.parent)
