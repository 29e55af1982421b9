"""Runs cut short by a request or simulated-time limit stop cleanly and say how far."""

import json

import pytest
from refusal import refused

from sim.runner.cli import main


def run(tmp_path, *flags):
    out = tmp_path / "run"
    status = main(["run", "--quiet", "--out", str(out), *flags])
    return status, out


def test_a_request_limit_replays_the_first_requests(tmp_path):
    status, out = run(tmp_path, "--max-requests", "300")
    summary = json.loads((out / "summary.json").read_text())
    assert status == 0 and summary["requests"] == summary["completed"] == 300
    assert summary["stopped_at_s"] is None


def test_a_time_limit_times_out_what_has_not_ended(tmp_path):
    status, out = run(tmp_path, "--until", "600", "--check")
    summary = json.loads((out / "summary.json").read_text())
    assert status == 0 and summary["stopped_at_s"] == 600.0
    assert summary["timed_out"] > 0
    assert summary["completed"] + summary["timed_out"] == summary["requests"]
    assert 0 < summary["gpu_seconds"] <= 16 * 600.0  # 16 GPUs, 600 s at most


@pytest.mark.parametrize(
    ("flags", "message"),
    [(["--until", "0"], "--until: expected a positive"), (["--max-requests", "0"], "--max")],
)
def test_bad_limits_are_refused_in_one_line(tmp_path, capsys, flags, message):
    argv = ["run", "--quiet", "--out", str(tmp_path / "run"), *flags]
    refused(capsys, main, argv, message, keeps=tmp_path)


def test_a_time_limit_after_the_end_cuts_nothing(tmp_path):
    status, out = run(tmp_path, "--max-requests", "200", "--until", "1e7")
    summary = json.loads((out / "summary.json").read_text())
    assert status == 0 and summary["stopped_at_s"] is None and summary["timed_out"] == 0
    assert summary["simulated_s"] < 1e7
