"""The machine footprint a validation reports: real memory and a real file's bytes."""

import os
from pathlib import Path

import numpy as np

from calibration.validate.footprint import Footprint, disk_used, memory_in_use

MB = 1 << 20


def _hold_until_sampled(footprint: Footprint) -> None:
    seen = footprint.samples
    while footprint.samples < seen + 2:  # two samples after the allocation
        os.sched_yield()


def test_memory_held_inside_the_block_shows_in_the_peak(tmp_path):
    with Footprint(tmp_path, interval_s=0.02) as footprint:
        held = np.ones(512 * MB, dtype=np.uint8)  # touched: resident
        _hold_until_sampled(footprint)
        del held
    # Half the allocation: other processes on the machine may free memory meanwhile.
    assert footprint.memory_peak - footprint.memory_start >= 256 * MB


def test_a_file_written_inside_the_block_shows_in_the_disk_peak(tmp_path):
    with Footprint(tmp_path, interval_s=0.02) as footprint:
        path = tmp_path / "blob"
        with path.open("wb") as f:
            f.write(os.urandom(64 * MB))
            f.flush()
            os.fsync(f.fileno())
        _hold_until_sampled(footprint)
        path.unlink()
    assert footprint.disk_peak - footprint.disk_start >= 32 * MB
    report = footprint.report()
    assert report["disk_used_peak_bytes"] == footprint.disk_peak
    assert report["disk"] == str(tmp_path)


def test_the_readings_are_the_machines():
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    in_use = memory_in_use()
    assert in_use is not None and 0 < in_use <= total
    st = os.statvfs("/")
    assert 0 < disk_used(Path("/")) <= st.f_blocks * st.f_frsize
