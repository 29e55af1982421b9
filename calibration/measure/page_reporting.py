"""Whether this machine is a virtual machine that hands the memory it frees back to its
host (virtio-balloon free page reporting).

On such a guest, a page the kernel frees may be reported to the host, which drops it;
the next process to touch that page waits while the host backs it again. A load into
fresh memory (a replay's DRAM copy, a probe's buffer) then costs CPU-seconds that depend
on what the machine freed in the seconds and minutes before, not on the load: on the
project's VM, a 2 GB load right after a download that had run beside another load took
3.03 s (medians of five rounds) against 1.39 s after a download alone, and 1.04 s against
1.03 s with reporting switched off (`python benchmarks/download_beside_load.py --rounds
5`, docs/calibration.md). A GPU server's
memory stays its own, so the validation's real side should not pay this; `validate`
and `measure` say when it may.
"""

from dataclasses import dataclass
from pathlib import Path

# The kernel's knob: the smallest free block, as a page order, that is reported.
ORDER = Path("module/page_reporting/parameters/page_reporting_order")
BALLOONS = Path("bus/virtio/drivers/virtio_balloon")
REPORTING_BIT = 5  # VIRTIO_BALLOON_F_REPORTING, in a virtio device's `features` string
MAX_PAGE_ORDER = 10  # the kernel's default, where /proc/buddyinfo cannot be read


@dataclass(frozen=True)
class PageReporting:
    """Free blocks of `order` pages and larger are reported; `off` is the order that
    no free block reaches (one past the largest in /proc/buddyinfo)."""

    order: int
    off: int

    def note(self) -> str:
        return (
            f"this VM reports freed memory to its host (virtio-balloon free page reporting, "
            f"blocks of order {self.order} and up): a load's first touch of fresh memory then "
            f"costs what the host takes to back it again, varying with what was freed "
            f"before; as root, `echo {self.off} > /sys/{ORDER}` switches it off until reboot"
        )


def free_page_reporting(
    sysfs: Path = Path("/sys"), proc: Path = Path("/proc")
) -> PageReporting | None:
    """The reporting in force on this machine, or None: no balloon device bound that
    reports, or an order that no free block can reach."""
    try:
        order = int((sysfs / ORDER).read_text())
    except (OSError, ValueError):
        return None
    if not any(_reports(device) for device in _balloons(sysfs)):
        return None
    off = _largest_order(proc) + 1
    return PageReporting(order, off) if order < off else None


def _balloons(sysfs: Path) -> list[Path]:
    try:
        return [p for p in (sysfs / BALLOONS).iterdir() if p.name.startswith("virtio")]
    except OSError:
        return []


def _reports(device: Path) -> bool:
    try:
        features = (device / "features").read_text().strip()
    except OSError:
        return False
    return len(features) > REPORTING_BIT and features[REPORTING_BIT] == "1"


def _largest_order(proc: Path) -> int:
    """The largest order of free block the kernel keeps (a column of /proc/buddyinfo
    per order after `Node N, zone NAME`)."""
    try:
        lines = (proc / "buddyinfo").read_text().splitlines()
    except OSError:
        lines = []
    columns = [len(line.split()) - 4 for line in lines if line.startswith("Node")]
    return max(columns, default=MAX_PAGE_ORDER + 1) - 1
