"""Shared by the tests of the benchmarks that time the replay's engines in rounds: the
script run as a user runs it, and what it leaves in /dev/shm."""

import subprocess
import sys
from pathlib import Path

SHM = Path("/dev/shm")


def run_benchmark(repo_root: Path, script: str, *args: str) -> subprocess.CompletedProcess:
    """`python benchmarks/SCRIPT ARGS...` from the repository's root."""
    return subprocess.run(
        [sys.executable, str(repo_root / "benchmarks" / script), *args],
        capture_output=True, text=True, cwd=repo_root,
    )  # fmt: skip


def shm_entries(prefix: str) -> set[str]:
    """The entries of /dev/shm named `prefix`... (others' come and go)."""
    return {p.name for p in SHM.iterdir() if p.name.startswith(prefix)} if SHM.is_dir() else set()
