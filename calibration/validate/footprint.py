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
    """Bytes of the machine's memory in use now; None where /proc/meminfo cannot say
    (missing, or a kernel without MemAvailable)."""
    try:
        fields = dict(line.split(":", 1) for line in MEMINFO.read_text().splitlines())
        total, available = (
            int(fields[key].split()[0]) * 1024 for key in ("MemTotal", "MemAvailable")
        )
    except (OSError, KeyError, ValueError):
        return None
    return total - available


def disk_used(path: Path) -> int | None:
    """Bytes used on the file system that holds `path`; None if it cannot be read."""
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def _higher(peak: int | None, reading: int | None) -> int | None:
    return reading if peak is None else peak if reading is None else max(peak, reading)


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
        """Read both now and keep the higher; a reading that fails is skipped."""
        self.memory_peak = _higher(self.memory_peak, memory_in_use())
        self.disk_peak = _higher(self.disk_peak, disk_used(self._disk))
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
        """The report's `machine_footprint`: bytes at the start and at the peak (None where
        the machine could not say)."""
        return {
            "memory_in_use_start_bytes": self.memory_start,
            "memory_in_use_peak_bytes": self.memory_peak,
            "disk_used_start_bytes": self.disk_start,
            "disk_used_peak_bytes": self.disk_peak,
            "disk": str(self._disk),
            "interval_s": self._interval_s,
            "samples": self.samples,
        }
