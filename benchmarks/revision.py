"""A git revision of this repository, checked out beside the working tree for as long as a
benchmark compares the two (`sim_speed.py --against REV`).

A speed figure is the machine's as much as the code's: on a shared machine the same cell
moves by a quarter from one run to the next. Two versions of the code are compared fairly
only in one session, their runs interleaved; a worktree of the revision lets one command
do that.
"""

import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the repository's working tree


class RevisionError(Exception):
    """The revision cannot be checked out: no git, no repository, or no such revision."""


@contextmanager
def checked_out(revision: str) -> Iterator[tuple[Path, str]]:
    """A temporary worktree of `revision`, and the commit it names; removed on exit."""
    try:
        commit = _git("rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}")
    except RevisionError:
        raise RevisionError(f"{revision}: no such revision in {ROOT}") from None
    with tempfile.TemporaryDirectory(prefix="thaw-against-") as tmp:
        tree = Path(tmp) / "tree"
        _git("worktree", "add", "--detach", "--quiet", str(tree), commit)
        try:
            yield tree, commit
        finally:
            _git("worktree", "remove", "--force", str(tree))


def _git(*args: str) -> str:
    try:
        done = subprocess.run(
            ["git", "-C", str(ROOT), *args], check=True, capture_output=True, text=True
        )
    except FileNotFoundError:
        raise RevisionError("git is not installed") from None
    except subprocess.CalledProcessError as err:
        lines = err.stderr.strip().splitlines()
        raise RevisionError(lines[-1] if lines else f"git {args[0]} failed") from None
    return done.stdout.strip()
