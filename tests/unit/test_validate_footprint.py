"""The machine footprint a validation reports: the peaks it keeps, and the machine's
real readings."""

import os
import time
from pathlib import Path

from calibration.validate import footprint
from calibration.validate.footprint import Footprint, disk_used, memory_in_use

GB = 10**9


def _scripted(monkeypatch, memory: list, disk: list) -> None:
    """The readers give these values in turn (the start's reading first)."""
    monkeypatch.setattr(footprint, "memory_in_use", iter(memory).__next__)
    monkeypatch.setattr(footprint, "disk_used", lambda _: next(disks))
    disks = iter(disk)


def test_the_peak_is_the_highest_reading_and_a_failed_one_is_skipped(monkeypatch, tmp_path):
    _scripted(monkeypatch, [2 * GB, 9 * GB, None, 5 * GB], [30 * GB, None, 38 * GB, 31 * GB])
    seen = Footprint(tmp_path)
    for _ in range(3):
        seen.sample()
    report = seen.report()
    assert report["memory_in_use_start_bytes"] == 2 * GB
    assert report["memory_in_use_peak_bytes"] == 9 * GB
    assert report["disk_used_start_bytes"] == 30 * GB
    assert report["disk_used_peak_bytes"] == 38 * GB
    assert report["samples"] == 3 and report["disk"] == str(tmp_path)


def test_a_machine_that_cannot_say_gives_none(monkeypatch, tmp_path):
    monkeypatch.setattr(footprint, "MEMINFO", tmp_path / "no-meminfo")
    assert memory_in_use() is None
    assert disk_used(tmp_path / "no-such-dir") is None
    _scripted(monkeypatch, [None, None], [None, 3 * GB])
    seen = Footprint(tmp_path)
    seen.sample()
    assert seen.memory_peak is None and seen.disk_peak == 3 * GB  # the first real reading


def test_the_thread_samples_while_the_block_runs(tmp_path):
    with Footprint(tmp_path, interval_s=0.01) as seen:
        deadline = time.monotonic() + 30
        while seen.samples < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
    assert seen.samples >= 3  # two in the block, one on the way out
    assert seen.memory_peak >= seen.memory_start > 0


def test_the_readings_are_the_machines():
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    in_use = memory_in_use()
    assert in_use is not None and 0 < in_use <= total
    st = os.statvfs("/")
    assert 0 < disk_used(Path("/")) <= st.f_blocks * st.f_frsize
