"""Start-ups grouped by the work they overlapped, on each side's own timeline."""

import numpy as np
import pandas as pd
import pytest

from calibration.validate.beside import runtime_start_beside
from calibration.validate.summary import beside_over_repeats


def _real(rows: list[tuple]) -> pd.DataFrame:
    columns = ["tier", "spawned", "started", "downloaded", "loaded"]
    return pd.DataFrame(rows, columns=columns)


def _sim(rows: list[tuple], warmup_s: float = 0.0) -> pd.DataFrame:
    """A simulated log of serial start-ups: runtime = ready - load - warm-up - allocated."""
    columns = ["tier", "allocated_s", "ready_s", "load_s", "download_s"]
    frame = pd.DataFrame(rows, columns=columns).assign(asleep=False)
    runtime = frame["ready_s"] - frame["load_s"] - warmup_s - frame["allocated_s"]
    return frame.assign(runtime_s=runtime)


NAN = np.nan


def test_each_start_up_is_labelled_by_the_kinds_of_work_it_overlapped():
    real = _real(
        [
            ("ssd", 0.0, 1.0, NAN, 3.0),  # alone: nothing else before t=1
            ("remote", 10.0, 11.0, 15.0, 16.0),  # alone
            ("dram", 12.0, 13.0, NAN, 13.1),  # beside the download (11-15)
            ("ssd", 15.2, 15.8, NAN, 17.5),  # beside the remote load's SSD part (15-16)
            # These two overlap each other and the load above (15.8-17.5).
            ("dram", 15.9, 16.9, NAN, 17.0),
            ("dram", 16.0, 17.0, NAN, 17.1),
        ]
    )
    out = runtime_start_beside(real, _sim([]), 0.0)
    assert {k: v["real_n"] for k, v in out.items()} == {
        "alone": 2, "download": 1, "load": 1, "start-up+load": 2,
    }  # fmt: skip
    assert list(out) == ["alone", "download", "load", "start-up+load"]
    assert out["alone"]["real_s"] == 1.0 and out["alone"]["sim_n"] == 0
    assert out["alone"]["sim_s"] is None


def test_loads_from_dram_keep_no_company():
    real = _real([("dram", 0.0, 1.0, NAN, 1.5), ("dram", 1.2, 2.2, NAN, 2.3)])
    out = runtime_start_beside(real, _sim([]), 0.0)
    assert out["alone"]["real_n"] == 2


def test_the_simulators_runtime_is_the_logged_one_and_its_load_follows_it():
    # allocated at 0, ready at 2.5 after a 1.0 s load and 0.5 s warm-up: runtime 0-1.0,
    # load 1.0-2.0; the second allocated at 1.5 sees that load.
    sim = _sim([("ssd", 0.0, 2.5, 1.0, NAN), ("dram", 1.5, 3.0, 0.1, NAN)], 0.5)
    out = runtime_start_beside(_real([]), sim, 0.5)
    assert out["alone"]["sim_s"] == pytest.approx(1.0)
    assert out["load"]["sim_s"] == pytest.approx(3.0 - 0.1 - 0.5 - 1.5)


def test_beside_the_load_the_simulators_runtime_is_timed_from_its_log():
    # Loads begin with their start-ups: an SSD load over 0-2 beside a 1.4 s runtime, and
    # a start at 1.5 whose 1.2 s runtime overlaps that load's end, not its runtime.
    sim = _sim([("ssd", 0.0, 2.5, 2.0, NAN), ("dram", 1.5, 3.0, 0.0, NAN)])
    sim["runtime_s"] = [1.4, 1.2]
    out = runtime_start_beside(_real([]), sim, 0.5, beside=True)
    assert out["alone"] == {"real_n": 0, "real_s": None, "sim_n": 1, "sim_s": 1.4}
    assert out["load"]["sim_s"] == pytest.approx(1.2)


def test_the_simulators_download_opens_its_load_and_counts_as_a_download():
    # A remote start allocated at 0: runtime 0-1, download 1-5, load from SSD 5-6, ready 6.
    # One allocated at 2 starts beside the download; one at 5.2, beside the SSD part.
    sim = _sim(
        [
            ("remote", 0.0, 6.0, 5.0, 4.0),
            ("dram", 2.0, 3.1, 0.1, NAN),
            ("dram", 5.2, 6.3, 0.1, NAN),
        ]
    )
    out = runtime_start_beside(_real([]), sim, 0.0)
    assert {k: v["sim_n"] for k, v in out.items()} == {"alone": 1, "download": 1, "load": 1}


def test_a_replay_that_started_nothing_groups_nothing():
    empty = runtime_start_beside(pd.DataFrame(), _sim([]), 0.0)
    assert empty == {}


def test_repeats_sum_counts_and_take_the_median_of_medians():
    runs = [
        {"alone": {"real_n": 2, "real_s": 1.0, "sim_n": 1, "sim_s": 1.1}},
        {"alone": {"real_n": 3, "real_s": 2.0, "sim_n": 0, "sim_s": None}},
        {"load": {"real_n": 1, "real_s": 1.5, "sim_n": 1, "sim_s": 1.2}},
    ]
    out = beside_over_repeats(runs)
    assert out["alone"] == {"real_n": 5, "real_s": 1.5, "sim_n": 1, "sim_s": 1.1}
    assert out["load"]["real_s"] == 1.5
