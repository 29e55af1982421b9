"""How much of the machine a validation run holds at its peak: memory in use, disk used.

A scenario's bounds (the tiers scenario's 12 GB of memory and 20 GB of disk) are the
whole machine's. The replay's engines are processes of their own and its DRAM caches are
files on /dev/shm, so the validating process's own resident memory says little. A thread
samples, every `interval_s`, the machine's memory in use (MemTotal less MemAvailable:
tmpfs pages count, as they cannot be reclaimed) and the used space of the file system
that holds the SSDs; the report carries both at the start and at their peak. Whatever
else runs on the machine counts too, hence the start beside the peak; a spike shorter
than the interval can be missed.
"""

import os
import threading
from pathlib import Path
from types import TracebackType

MEMINFO = Path("/proc/meminfo")
INTERVAL_S = 0.5


def memory_in_use() -> int | None:
    """Bytes of the machine's memory in use now; None where /proc/meminfo is missing."""
    try:
        text = MEMINFO.read_text()
    except OSError:
        return None
    fields = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        fields[key] = int(value.split()[0]) * 1024  # kB
    return fields["MemTotal"] - fields["MemAvailable"]


def disk_used(path: Path) -> int:
    """Bytes used on the file system that holds `path`."""
    st = os.statvfs(path)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


class Footprint:
    """Samples memory in use and `disk`'s used space in a thread while the block runs."""

    def __init__(self, disk: Path, interval_s: float = INTERVAL_S) -> None:
        self._disk = disk
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="thaw-footprint", daemon=True)
        self.samples = 0
        self.memory_start = self.memory_peak = memory_in_use()
        self.disk_start = self.disk_peak = disk_used(disk)

    def sample(self) -> None:
        memory, disk = memory_in_use(), disk_used(self._disk)
        if memory is not None and self.memory_peak is not None:
            self.memory_peak = max(self.memory_peak, memory)
        self.disk_peak = max(self.disk_peak, disk)
        self.samples += 1

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            self.sample()

    def __enter__(self) -> "Footprint":
        self._thread.start()
        return self

    def __exit__(
        self, kind: type | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()

    def report(self) -> dict:
        """The report's `machine_footprint`: bytes at the start and at the peak."""
        return {
            "memory_in_use_start_bytes": self.memory_start,
            "memory_in_use_peak_bytes": self.memory_peak,
            "disk_used_start_bytes": self.disk_start,
            "disk_used_peak_bytes": self.disk_peak,
            "disk": str(self._disk),
            "interval_s": self._interval_s,
        }
