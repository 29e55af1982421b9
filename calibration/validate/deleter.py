"""Deleting the replay's SSD copies off its loop, as a checkpoint cache's eviction runs
beside the server's work.

Deleting a gigabyte-sized file can wait on the disk for a tenth of a second or more (a
file system that discards freed blocks as it frees them: `calibration.measure.delete_probe`).
The replay's scheduler is one loop timing every request, so a deletion made there would
hold back every arrival and message behind it, which no cluster's scheduler does and the
simulator does not model; it would still take the disk from the loads beside it, which
the simulator does model (`ssd_delete_s_per_gb`). So a copy is moved aside at once (a
new copy may be written in its place next), then deleted by a thread of its own.
"""

import itertools
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ASIDE = ".deleting-"  # the prefix of a copy moved aside, in its own directory


class Deleter:
    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="deleter")
        self._count = itertools.count()

    def delete(self, copy: Path) -> None:
        """Move the directory `copy` aside and delete it in the background (none: nothing)."""
        aside = copy.parent / f"{ASIDE}{next(self._count)}-{copy.name}"
        try:
            copy.rename(aside)
        except FileNotFoundError:
            return
        self._pool.submit(shutil.rmtree, aside, ignore_errors=True)

    def close(self) -> None:
        """Wait for every deletion begun."""
        self._pool.shutdown(wait=True)
