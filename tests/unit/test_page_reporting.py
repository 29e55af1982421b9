"""`free_page_reporting` on hand-built /sys and /proc trees: reporting is in force only
where a bound balloon device offers it and its order is one a free block can reach."""

from pathlib import Path

from calibration.measure.page_reporting import ORDER, PageReporting, free_page_reporting

BUDDY = "Node 0, zone   Normal " + " ".join(str(n) for n in range(11)) + "\n"  # orders 0-10
# A balloon's features, one character per bit: bit 5 (VIRTIO_BALLOON_F_REPORTING) set.
REPORTS = "0110010100000000"
SILENT = "0110000100000000"


def _machine(
    root: Path, order: str | None, features: list[str], buddy: str = BUDDY
) -> tuple[Path, Path]:
    sysfs, proc = root / "sys", root / "proc"
    proc.mkdir(parents=True)
    (proc / "buddyinfo").write_text(buddy)
    if order is not None:
        (sysfs / ORDER).parent.mkdir(parents=True)
        (sysfs / ORDER).write_text(order + "\n")
    for k, bits in enumerate(features):
        device = sysfs / "bus/virtio/drivers/virtio_balloon" / f"virtio{k}"
        device.mkdir(parents=True)
        (device / "features").write_text(bits + "\n")
    return sysfs, proc


def test_a_reporting_balloon_at_a_reachable_order_is_in_force(tmp_path):
    sysfs, proc = _machine(tmp_path, "9", [SILENT, REPORTS])
    found = free_page_reporting(sysfs, proc)
    assert found == PageReporting(order=9, off=11)  # eleven columns: orders 0 to 10
    assert "order 9" in found.note() and f"echo 11 > /sys/{ORDER}" in found.note()


def test_an_order_past_the_largest_free_block_reports_nothing(tmp_path):
    assert free_page_reporting(*_machine(tmp_path, "11", [REPORTS])) is None


def test_no_balloon_that_reports_means_none(tmp_path):
    assert free_page_reporting(*_machine(tmp_path / "a", "9", [SILENT])) is None
    assert free_page_reporting(*_machine(tmp_path / "b", "9", [])) is None


def test_a_kernel_without_page_reporting_means_none(tmp_path):
    assert free_page_reporting(*_machine(tmp_path, None, [REPORTS])) is None


def test_an_unreadable_buddyinfo_falls_back_to_the_kernels_default(tmp_path):
    sysfs, proc = _machine(tmp_path, "10", [REPORTS])
    (proc / "buddyinfo").unlink()
    assert free_page_reporting(sysfs, proc) == PageReporting(order=10, off=11)
