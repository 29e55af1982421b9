"""`running_store`: the store as a subprocess for as long as a block runs.

A separate process, not a thread: the store's event loop must not share the GIL with
a client that checksums or copies what it downloads, or the client's work would slow
the "network" it is measuring. Its CPU-seconds can be read while it runs (on one box it
takes the same cores as the servers it serves).
"""

import os
import select
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from calibration.remote.store import HOST

STARTUP_TIMEOUT_S = 30.0  # importing tornado takes well under a second


class StoreNotStarted(RuntimeError):
    """The store's process exited, or did not say its port in time."""


@dataclass(frozen=True)
class RunningStore:
    url: str  # http://127.0.0.1:PORT
    pid: int

    def cpu_s(self) -> float:
        """The CPU-seconds the store's process has taken so far (user and system)."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def running_store(
    root: Path, rate: float, *, timeout_s: float = STARTUP_TIMEOUT_S
) -> Iterator[RunningStore]:
    """Start `python -m calibration.remote --root root --rate rate`, yield it (its base
    URL and process), and end the process when the block exits, however it exits."""
    command = [sys.executable, "-m", "calibration.remote", "--root", str(root)]
    command += ["--rate", repr(float(rate))]
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=errors)
        try:
            port = _port(process, errors, timeout_s)
            yield RunningStore(f"http://{HOST}:{port}", process.pid)
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            process.stdout.close()


def _port(process: subprocess.Popen, errors, timeout_s: float) -> int:
    """The port the store says it listens on, from its first line on stdout."""
    deadline = time.monotonic() + timeout_s
    line = b""
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        ready, _, _ = select.select([process.stdout], [], [], max(left, 0))
        if not ready:
            raise StoreNotStarted(
                f"the remote store did not say its port within {timeout_s:g} s "
                f"({_last_line(errors)})"
            )
        byte = os.read(process.stdout.fileno(), 1)
        if not byte:
            process.wait()
            raise StoreNotStarted(
                f"the remote store exited with status {process.returncode}: {_last_line(errors)}"
            )
        line += byte
    word, _, port = line.decode().strip().partition(" ")
    if word != "port" or not port.isdigit():
        raise StoreNotStarted(f"the remote store said {line!r}, not its port")
    return int(port)


def _last_line(errors) -> str:
    errors.seek(0)
    lines = errors.read().decode(errors="replace").strip().splitlines()
    return lines[-1] if lines else "nothing on stderr"
