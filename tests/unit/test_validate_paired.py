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


def _sim(rows: list[tuple], warmup_s: float = 0.0) -> pd.DataFrame:
    """A simulated log of serial start-ups: runtime = ready - load - warm-up - allocated."""
    columns = ["model", "server", "tier", "allocated_s", "ready_s", "load_s", "download_s"]
    frame = pd.DataFrame(rows, columns=columns).assign(asleep=False)
    runtime = frame["ready_s"] - frame["load_s"] - warmup_s - frame["allocated_s"]
    return frame.assign(runtime_s=runtime)


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
# Simulated, with a warm-up of 0.1 s.
SIM = _sim(
    [
        ("b", 1, "remote", 5.1, 5.1 + 1.0 + 4.0 + 0.1, 4.0, 3.0),  # listed first: sorted
        ("a", 0, "ssd", 0.0, 1.0 + 1.0 + 0.1, 1.0, NAN),
        ("a", 0, "dram", 7.2, 7.2 + 1.0 + 0.1 + 0.1, 0.1, NAN),
        ("b", 1, "ssd", 20.0, 22.1, 1.0, NAN),
    ],
    0.1,
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


def test_two_starts_begun_together_pair_in_either_order():
    real = _real(
        [("a", 0, "dram", 10.0, 11.0, NAN, 11.1), ("b", 1, "dram", 10.02, 11.0, NAN, 11.1)]
    )
    sim = _sim(
        [
            ("b", 1, "dram", 10.01, 11.11, 0.1, NAN),  # the simulator started b first
            ("a", 0, "dram", 10.03, 11.13, 0.1, NAN),
        ]
    )
    out = paired_stages(real, sim, 0.0)
    assert out["pairs"] == 2 and out["runtime"]["all"]["n"] == 2


def test_a_simulated_start_the_replay_never_made_ends_the_pairing():
    real = _real([("a", 0, "dram", 0.0, 1.0, NAN, 1.1), ("a", 0, "dram", 9.0, 10.0, NAN, 10.1)])
    sim = _sim(
        [
            ("a", 0, "dram", 0.0, 1.1, 0.1, NAN),
            ("b", 1, "dram", 5.0, 6.1, 0.1, NAN),  # no real twin
            ("a", 0, "dram", 9.0, 10.1, 0.1, NAN),
        ]
    )
    assert paired_stages(real, sim, 0.0)["pairs"] == 1


def test_a_stage_the_replay_never_finished_is_left_out():
    real = _real([("a", 0, "ssd", 0.0, 1.0, NAN, NAN)])  # cut short while loading
    sim = _sim([("a", 0, "ssd", 0.0, 2.0, 1.0, NAN)])
    out = paired_stages(real, sim, 0.0)
    assert out["pairs"] == 1 and out["runtime"]["all"]["n"] == 1
    assert out["disk load"] == {"all": {"n": 0, "real_s": None, "sim_s": None, "ratio": None}}


def test_repeats_add_their_pairs_and_take_the_median_of_their_figures():
    runs = [paired_stages(REAL, SIM, 0.1), paired_stages(REAL, SIM.assign(server=3), 0.1)]
    out = paired_over_repeats(runs)
    assert out["pairs"] == 3 and out["instances"] == 8
    assert out["runtime"]["all"]["n"] == 3  # the repeat with no pairs is left out
    assert out["runtime"]["all"]["ratio"] == pytest.approx(1.2)
    assert list(out["runtime"]) == ["all", "alone", "download"]
