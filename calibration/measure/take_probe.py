"""An engine's take of its checkpoint from host memory, timed where an engine takes it.

A start from the DRAM cache, and with a checkpoint store every start once the store's
copy is there, is a fresh engine process running the real loader on the copy held in its
server's DRAM cache (a file on /dev/shm): on the CPU it maps the file, faulting in and
checksumming every page; on a GPU it reads the file through its staging ring onto the
device. The measuring process's own warm loader (`loader_warm`) reads the page cache
into memory it has touched before: on the project's VM it ran about 1.8 times as fast
as the replayed engines' takes (docs/calibration.md, the tiers scenario). So the
profile's DRAM-to-device rate is this take, timed in a process of its own started for
it, after its torch import and its device context, as an engine's "started" stamp
comes before its load, and with torch's intra-op threads set to one, as the replay's
engine sets them before it loads (torch's default threads would compete with the
loader's own for the cores).

`python -m calibration.measure.take_probe CHECKPOINT DEVICE` is that process; it prints
the load's seconds.
"""

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from calibration.checkpoint.dram_install import read_into_dram
from calibration.checkpoint.format import payload_bytes
from calibration.checkpoint.reader import buffer_bytes, load
from calibration.measure.disk_readers import SHM
from calibration.measure.measurement import Measurement

TAKE = "loader_take"
TIMEOUT_S = 600  # one take of a checkpoint of tens of GB, with its process's start


def measure_take(checkpoint: Path, device: str, runs: int, scratch: Path) -> dict[str, Measurement]:
    """`loader_take`: the tensor bytes of `checkpoint` over the seconds a fresh process
    took to load its copy in a DRAM cache directory onto `device`, in each of `runs`
    processes: on /dev/shm, or where it has no room (a container's is often 64 MB) a
    file in `scratch`, which the page cache then holds."""
    payload = payload_bytes(checkpoint)
    memory = _memory(checkpoint, scratch)
    with tempfile.TemporaryDirectory(prefix="thaw-take-", dir=memory) as cache:
        copy = Path(cache) / "copy"
        # Written as a store writes it, read cold with O_DIRECT straight into a new file
        # (how a copy was written changes how fast a fresh process takes it).
        with read_into_dram(checkpoint, copy):
            pass
        command = [sys.executable, "-m", __name__, str(copy), device]
        samples = tuple(payload / _take_s(command) for _ in range(runs))
    return {TAKE: Measurement(samples, "bytes/s", True)}


def _memory(checkpoint: Path, scratch: Path) -> Path:
    """/dev/shm where it has room for the copy and a margin, else `scratch`."""
    if SHM.is_dir() and shutil.disk_usage(SHM).free > 2 * buffer_bytes(checkpoint):
        return SHM
    return scratch


def _take_s(command: list[str]) -> float:
    """The seconds one fresh process's take took (its last line of output)."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"the take probe did not end within {TIMEOUT_S} s") from None
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"the take probe failed (exit status {done.returncode}): {last}")
    return float(done.stdout.split()[-1])


def _probe(checkpoint: Path, device: torch.device) -> float:
    """In the fresh process: the device's context made and one intra-op thread set, as
    the replay's engine does (untimed), then the load."""
    torch.set_num_threads(1)
    if device.type == "cuda":
        torch.zeros(1, device=device)  # the context, as the engine makes it
        torch.cuda.synchronize(device)
    started = time.perf_counter()
    load(checkpoint, device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() - started


def main(argv: list[str]) -> None:
    checkpoint, device = argv
    print(_probe(Path(checkpoint), torch.device(device)))


if __name__ == "__main__":
    main(sys.argv[1:])
