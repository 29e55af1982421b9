"""How much a validation's percentile error can say: its rank error and its sensitivity."""

import json

import numpy as np
import pytest

from calibration.validate.compare import simulate
from calibration.validate.conditioning import (
    STEP,
    rank_errors,
    scaled_profile,
    scaled_speeds,
    sensitivities,
)
from calibration.validate.scenario import QUICK, Layout, write_cluster
from tests.validate_support import DERIVED, MODELS, write_profile


def test_the_rank_error_counts_the_simulated_requests_below_the_real_percentile():
    real = np.arange(1.0, 101.0)  # its median is 50.5
    # 46 simulated requests below the real median, 54 above: 4 points short at p50.
    simulated = np.concatenate([np.full(46, 10.0), np.full(54, 90.0)])
    assert rank_errors(real, simulated)["ttft_p50_rank_error"] == pytest.approx(-0.04)


def test_a_simulated_request_at_the_real_percentile_counts_half():
    real = np.array([1.0, 2.0, 3.0])  # its median is 2
    assert rank_errors(real, np.array([1.0, 2.0, 2.0, 5.0]))["ttft_p50_rank_error"] == 0.0
    assert rank_errors(real, real * 10)["ttft_p50_rank_error"] == -0.5  # all above


def test_a_simulated_request_never_served_counts_above_every_percentile():
    real = np.array([1.0, 2.0, 3.0, 4.0])  # its median is 2.5
    simulated = np.array([1.0, 2.0, np.nan, np.nan])  # half below it, half never served
    assert rank_errors(real, simulated)["ttft_p50_rank_error"] == 0.0


def test_a_real_request_without_a_ttft_leaves_the_rank_error_undefined():
    real = np.array([1.0, np.nan, 3.0])
    assert all(np.isnan(v) for v in rank_errors(real, np.array([1.0, 2.0, 3.0])).values())


def test_scaled_speeds_make_rates_faster_and_times_and_costs_shorter():
    derived = {
        "ssd_read_bytes_per_s": 1.0e9,
        "recompute_tokens_per_s": 2000.0,
        "instance_startup_s": 2.1,
        "decode_step_per_request_s": 0.0021,
        "load_cpu_s_per_byte": 2.1e-9,
        "host_cores": 1.8,
        "reference_model_bytes": 64e6,
        "startup_company_slowdown": 0.2,
    }
    scaled = scaled_speeds(derived, 1.05)
    assert scaled["ssd_read_bytes_per_s"] == pytest.approx(1.05e9)
    assert scaled["recompute_tokens_per_s"] == pytest.approx(2100.0)
    assert scaled["instance_startup_s"] == pytest.approx(2.0)
    assert scaled["decode_step_per_request_s"] == pytest.approx(0.002)
    assert scaled["load_cpu_s_per_byte"] == pytest.approx(2.0e-9)
    for kept in ("host_cores", "reference_model_bytes", "startup_company_slowdown"):
        assert scaled[kept] == derived[kept]


def test_a_lone_cold_start_moves_exactly_with_the_speeds(tmp_path):
    # One request, alone on the cluster: every part of its TTFT is a speed of the profile
    # (start-up, load, prefill), so every percentile moves by the larger of 5% and
    # 1 - 1/1.05, and no scaled profile is left behind.
    layout = Layout(tmp_path, tmp_path)
    write_cluster(QUICK, layout, MODELS)
    layout.trace.write_text("arrival_s,model,input_tokens,output_tokens\n0.5,a,16,8\n")
    profile = write_profile(tmp_path / "profile.json")
    table, _ = simulate(layout, profile, "locality", 0)
    before = set(tmp_path.iterdir())
    moved = sensitivities(layout, profile, "locality", 0, table["ttft_s"].to_numpy())
    assert moved == {f"ttft_p{q}_sensitivity": pytest.approx(STEP - 1) for q in (50, 90, 99)}
    assert set(tmp_path.iterdir()) == before


def test_a_scaled_profile_keeps_everything_but_the_speeds(tmp_path):
    profile = write_profile(tmp_path / "profile.json")
    out = scaled_profile(profile, 2.0, tmp_path / "scaled.json")
    document, original = json.loads(out.read_text()), json.loads(profile.read_text())
    assert document["machine"] == original["machine"]
    assert document["derived"]["ssd_read_bytes_per_s"] == 2 * DERIVED["ssd_read_bytes_per_s"]
    assert document["derived"]["reference_model_bytes"] == DERIVED["reference_model_bytes"]
