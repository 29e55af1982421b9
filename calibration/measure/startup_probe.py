"""An instance's start-up fixed cost: a fresh process that imports torch and creates its
device context, before any checkpoint byte is read.

Timed from outside, as a scheduler sees it: from spawning the process to its word that
one tiny operation on the device is done (which, on a GPU, creates the CUDA context);
its exit, and the context's teardown, are not counted. The first run is kept apart: it
may read torch's libraries from disk, where the later ones find them in the page cache,
as they would on a serving machine that has started instances before.
"""

import subprocess
import sys
import time

from calibration.measure.measurement import Measurement

READY = "ready"


def measure_startup(device: str, runs: int) -> dict[str, Measurement]:
    """`instance_startup` (the runs after the first) and `instance_startup_first`, in s."""
    code = (
        "import torch\n"
        f"torch.zeros(1, device={device!r}).add_(1).sum().item()\n"
        f"print({READY!r}, flush=True)\n"
    )
    samples = [_time_to_ready(code) for _ in range(runs + 1)]
    return {
        "instance_startup_first": Measurement(tuple(samples[:1]), "s", True),
        "instance_startup": Measurement(tuple(samples[1:]), "s", True),
    }


def _time_to_ready(code: str) -> float:
    started = time.perf_counter()
    with subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as child:
        line = child.stdout.readline()
        ready = time.perf_counter()
        _, errors = child.communicate()
    if line.strip() != READY or child.returncode:
        last = (errors.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"the start-up probe failed: {last}")
    return ready - started
