"""The starts a replay and its simulation shared, compared stage by stage until they part."""

import numpy as np
import pandas as pd
import pytest

from calibration.validate.paired import paired_stages
from calibration.validate.summary import paired_over_repeats

NAN = np.nan


def _real(rows: list[tuple]) -> pd.DataFrame:
    columns = ["model", "server", "tier", "spawned", "started", "downloaded", "loaded"]
    return pd.DataFrame(rows, columns=columns)


def _sim(rows: list[tuple]) -> pd.DataFrame:
    columns = ["model", "server", "tier", "allocated_s", "ready_s", "load_s", "download_s"]
    return pd.DataFrame(rows, columns=columns).assign(asleep=False)


# Real: a start from SSD alone, a remote start beside it, then one the simulator put on
# the other server: the two part there, and the last start is not compared.
REAL = _real(
    [
        ("a", 0, "ssd", 0.0, 1.2, NAN, 2.2),
        ("b", 1, "remote", 5.0, 6.0, 9.0, 10.5),
        ("a", 0, "dram", 7.0, 8.2, NAN, 8.3),  # its runtime overlaps b's download
        ("b", 0, "ssd", 20.0, 21.0, NAN, 22.0),
    ]
)
# Simulated, with a warm-up of 0.1 s: runtime = ready - load - warm-up - allocated.
SIM = _sim(
    [
        ("b", 1, "remote", 5.1, 5.1 + 1.0 + 4.0 + 0.1, 4.0, 3.0),  # listed first: sorted
        ("a", 0, "ssd", 0.0, 1.0 + 1.0 + 0.1, 1.0, NAN),
        ("a", 0, "dram", 7.2, 7.2 + 1.0 + 0.1 + 0.1, 0.1, NAN),
        ("b", 1, "ssd", 20.0, 22.1, 1.0, NAN),
    ]
)


def test_stages_are_compared_over_the_starts_both_sides_shared():
    out = paired_stages(REAL, SIM, 0.1)
    assert out["pairs"] == 3 and out["instances"] == 4
    runtime = out["runtime"]
    assert runtime["all"]["n"] == 3
    assert runtime["all"]["ratio"] == pytest.approx(1.2)  # 1.2/1.0, 1.0/1.0, 1.2/1.0
    assert runtime["alone"]["n"] == 2 and runtime["download"]["n"] == 1
    assert runtime["download"]["real_s"] == pytest.approx(1.2)
    # b's download, 3 s real and 3 s simulated; its disk load 1.5 s against 1 s.
    assert out["download"]["all"] == {"n": 1, "real_s": 3.0, "sim_s": 3.0, "ratio": 1.0}
    disk = out["disk load"]["all"]
    assert disk["n"] == 2 and disk["ratio"] == pytest.approx((1.0 + 1.5) / 2)


def test_a_replay_that_parts_at_once_pairs_nothing():
    out = paired_stages(REAL, SIM.assign(server=3), 0.1)
    assert out["pairs"] == 0
    assert out["runtime"] == {"all": {"n": 0, "real_s": None, "sim_s": None, "ratio": None}}
    empty = paired_stages(pd.DataFrame(), SIM, 0.1)
    assert empty["pairs"] == 0 and empty["instances"] == 0


def test_repeats_add_their_pairs_and_take_the_median_of_their_figures():
    runs = [paired_stages(REAL, SIM, 0.1), paired_stages(REAL, SIM.assign(server=3), 0.1)]
    out = paired_over_repeats(runs)
    assert out["pairs"] == 3 and out["instances"] == 8
    assert out["runtime"]["all"]["n"] == 3  # the repeat with no pairs is left out
    assert out["runtime"]["all"]["ratio"] == pytest.approx(1.2)
    assert list(out["runtime"]) == ["all", "alone", "download"]
