"""How long deleting a checkpoint holds the disk: `ssd_delete`, seconds per byte.

A cache of checkpoints on SSD deletes one at each eviction. On a file system that
discards freed blocks as it frees them (ext4 mounted with `discard`), the deletion waits
on the device, and a load reading the disk meanwhile waits with it: on the project's VM,
this probe timed 0.12-0.19 s per GB deleted (`python -m calibration.measure --quick`,
three runs), and a 1.5 GB load beside the deletion of a 2 GB copy took 1.12 s against
0.87 s alone (`python benchmarks/download_beside_load.py --rounds 5`; docs/model.md).
Each copy is synced first, so the time is the deletion's, not a write-back's.
"""

import os
import shutil
import time
from pathlib import Path

from calibration.checkpoint.format import BLOB_NAME
from calibration.measure.measurement import Measurement

DELETE = "ssd_delete"


def measure_deletes(copies: list[Path]) -> dict[str, Measurement]:
    """Delete each checkpoint directory of `copies`, timing each: seconds per blob byte."""
    samples = []
    for copy in copies:
        size = (copy / BLOB_NAME).stat().st_size
        os.sync()
        started = time.perf_counter()
        shutil.rmtree(copy)
        samples.append((time.perf_counter() - started) / size)
    return {DELETE: Measurement(tuple(samples), "s/byte", False)}
