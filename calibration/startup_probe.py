"""An instance's start-up fixed cost: a fresh process that imports torch and creates its
device context, before any checkpoint byte is read.

Timed from outside, as a scheduler sees it: from spawning the process to its exit after
one tiny operation on the device (which, on a GPU, creates the CUDA context). The first
run is kept apart: it may read torch's libraries from disk, where the later ones find
them in the page cache, as they would on a serving machine that has started instances
before.
"""

import subprocess
import sys

from calibration.measurement import Measurement, seconds


def measure_startup(device: str, runs: int) -> dict[str, Measurement]:
    """`instance_startup` (the runs after the first) and `instance_startup_first`, in s."""
    code = f"import torch\ntorch.zeros(1, device={device!r}).add_(1).sum().item()\n"
    samples = [seconds(lambda: _run(code)) for _ in range(runs + 1)]
    return {
        "instance_startup_first": Measurement(tuple(samples[:1]), "s", True),
        "instance_startup": Measurement(tuple(samples[1:]), "s", True),
    }


def _run(code: str) -> None:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"the start-up probe failed: {last}")
