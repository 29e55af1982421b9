"""analysis: loading runs and sweeps, statistics over seeds, and the report end to end."""

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from refusal import refused

import traces
from analysis import AnalysisInputError, bootstrap_ci, over_seeds, read_runs, slo_attainment
from analysis.cli import main
from analysis.report import settings_table
from sim.runner.cli import main as sim_main
from sim.runner.sweep.driver import run_sweep
from sim.runner.sweep.grid import read_sweep


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory) -> Path:
    """2 policies x 2 rate scales x 2 seeds on the first 300 requests of the bundled trace."""
    root = tmp_path_factory.mktemp("analysis")
    lines = traces.default_trace().read_text().splitlines(keepends=True)
    (root / "head.csv").write_text("".join(lines[:301]))
    grid = {"policies": ["random", "locality"], "rate_scales": [1, 2], "seeds": 2,
            "traces": [str(root / "head.csv")], "jobs": 1, "out": root / "sweep"}  # fmt: skip
    run_sweep(read_sweep(None, grid))
    return root / "sweep"


def test_bootstrap_ci_is_seeded_and_brackets_the_mean():
    values = [10.0, 12.0, 15.0, 30.0]
    estimate, low, high = bootstrap_ci(values)
    assert estimate == pytest.approx(16.75) and low < estimate < high
    assert (low, high) == bootstrap_ci(values)[1:]  # same seed, same interval
    many = np.random.default_rng(0).exponential(10, 30)
    assert bootstrap_ci(many, seed=1) != bootstrap_ci(many)  # the seed matters
    assert low >= 10 and high <= 30  # a mean of resampled values stays within them
    assert bootstrap_ci([5.0, 5.0, 5.0]) == (5.0, 5.0, 5.0)
    one = bootstrap_ci([7.0])
    assert one[0] == 7.0 and np.isnan(one[1]) and np.isnan(one[2])
    wide = bootstrap_ci([1.0, 100.0, 1.0, 100.0])
    narrow = bootstrap_ci([50.0, 51.0, 50.0, 51.0])
    assert wide[2] - wide[1] > narrow[2] - narrow[1]


def test_slo_attainment_counts_unfinished_requests_as_misses():
    requests = pd.DataFrame({
        "trace": "t", "cluster": "c", "rate_scale": 1.0, "policy": "p", "seed": [0, 0, 0, 0, 1],
        "status": ["done", "done", "done", "dropped", "done"],
        "ttft_s": [1.0, 2.0, 9.0, np.nan, 3.0],
    })  # fmt: skip
    met = slo_attainment(requests, 2.0).set_index("seed")["slo_attainment"]
    assert met[0] == 0.5 and met[1] == 0.0


def test_a_sweep_a_run_and_a_directory_of_runs_load_alike(sweep_dir, tmp_path):
    runs = read_runs(sweep_dir)
    table = runs.table
    assert len(table) == 8 and runs.policies() == ["random", "locality"]
    assert list(table.columns[:5]) == ["policy", "trace", "rate_scale", "cluster", "seed"]
    summary = pd.read_parquet(sweep_dir / "sweep.parquet")
    merged = table.merge(summary, on=["policy", "rate_scale", "seed"], suffixes=("", "_sweep"))
    assert (merged["ttft_p99_s"] == merged["ttft_p99_s_sweep"]).all()
    requests = runs.requests(["ttft_s", "status"])
    assert len(requests) == 8 * 300 and set(requests["rate_scale"]) == {1.0, 2.0}

    one = read_runs(sweep_dir / "runs" / "locality-head-x2-default-seed1").table
    assert len(one) == 1 and one.loc[0, "rate_scale"] == 2.0
    shutil.copytree(sweep_dir / "runs", tmp_path / "loose")  # run dirs without the sweep table
    assert len(read_runs(tmp_path / "loose").table) == 8
    trace = sweep_dir.parent / "head.csv"
    plain_dir = str(tmp_path / "plain")
    assert sim_main(["run", "--trace", str(trace), "--out", plain_dir, "--quiet"]) == 0
    plain = read_runs(tmp_path / "plain").table.iloc[0]  # a `sim run` directory: no sweep record
    assert (plain["policy"], plain["trace"], plain["rate_scale"]) == ("locality", "head", 1.0)
    assert plain["cluster"].startswith("config-") and plain["seed"] == 0

    ci = over_seeds(table, "ttft_p99_s")
    assert len(ci) == 4 and (ci["seeds"] == 2).all()
    assert ((ci["low"] <= ci["mean"]) & (ci["mean"] <= ci["high"])).all()


def test_the_report_of_a_sweep(sweep_dir, tmp_path, capsys):
    assert main(["report", str(sweep_dir), "-o", str(tmp_path / "report"), "--slo", "5"]) == 0
    out = tmp_path / "report"
    for stem in ("ttft_cdf", "p99_vs_load", "breakdown", "loads_by_tier", "timeline"):
        for ext in ("png", "svg"):
            assert (out / f"{stem}.{ext}").stat().st_size > 5000, stem
    report = (out / "report.md").read_text()
    rows = [line for line in report.splitlines() if line.startswith("| x")]
    assert len(rows) == 4 and all(" | 2 | " in row for row in rows)  # 4 settings, 2 seeds each
    assert "TTFT <= 5 s" in report and "![" in report
    p99 = read_runs(sweep_dir).table.query("policy == 'random' and rate_scale == 1")["ttft_p99_s"]
    row = next(line for line in rows if line.startswith("| x1 | random | 2 | "))
    assert f"| {p99.mean():.1f} [" in row
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]  # no staging left
    # An earlier report is replaced.
    assert main(["report", str(sweep_dir / "runs" / "random-head-x1-default-seed0"), "-o",
                 str(out)]) == 0  # fmt: skip
    assert not (out / "p99_vs_load.png").exists()  # one run: one load, no load curve
    assert "1 run: policies random; rate scales x1; seeds 0." in (out / "report.md").read_text()


def test_the_settings_table_of_one_scenario_out_of_several(sweep_dir):
    """A scenario is a slice of the runs table (its index does not start at 0)."""
    runs = read_runs(sweep_dir)
    slo = slo_attainment(runs.requests(["ttft_s", "status"]), 5.0)
    part = runs.table[runs.table["rate_scale"] == 2.0]
    assert part.index[0] > 0
    table = settings_table(part, slo, 5.0).set_index("policy")
    for policy, rows in part.groupby("policy"):
        per_request = (rows["gpu_seconds"] / rows["completed"]).mean()
        assert table.loc[policy, "GPU-s / request"] == f"{per_request:.1f}"
        dram = rows["loads_by_tier.dram"].mean()
        assert table.loc[policy, "loads dram/ssd/remote/peer"].startswith(f"{dram:.0f}/")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["missing"], "missing: no such directory"),
        (["empty"], "empty: no run directories (with a summary.json) found"),
        (["SWEEP", "-o", "mine"], "mine: exists and is not a thaw report directory"),
        (["SWEEP", "--slo", "0"], "--slo: expected a positive number"),
    ],
)
def test_bad_input_gets_one_line_exit_2_and_writes_nothing(
    sweep_dir, tmp_path, monkeypatch, capsys, args, expected
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").mkdir()
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("precious")
    args = [str(sweep_dir) if a == "SWEEP" else a for a in args]
    if "-o" not in args:
        args += ["-o", "out"]
    refused(capsys, main, ["report", *args], expected, keeps=tmp_path)


def test_read_runs_refuses_what_holds_no_runs(tmp_path):
    with pytest.raises(AnalysisInputError, match="no run directories"):
        read_runs(tmp_path)


def test_a_report_on_a_run_cut_before_any_request_finished_is_refused(tmp_path, capsys):
    assert sim_main(["run", "--until", "3", "--quiet", "--out", str(tmp_path / "cut")]) == 0
    assert main(["report", str(tmp_path / "cut"), "-o", str(tmp_path / "rep")]) == 2
    assert "no run completed a request" in capsys.readouterr().err
    assert not (tmp_path / "rep").exists()


@pytest.mark.slow
def test_the_report_of_a_sweep_over_keep_alives_draws_their_trade_off(tmp_path, sweep_dir):
    lines = traces.default_trace().read_text().splitlines(keepends=True)
    (tmp_path / "head.csv").write_text("".join(lines[:101]))
    grid = {"policies": ["random", "locality"], "seeds": 2, "jobs": 1, "out": tmp_path / "s",
            "traces": [str(tmp_path / "head.csv")],
            "keep_alives": ["fixed:0", "fixed:600"]}  # fmt: skip
    run_sweep(read_sweep(None, grid))
    assert main(["report", str(tmp_path / "s"), "-o", str(tmp_path / "report")]) == 0
    out = tmp_path / "report"
    assert (out / "keep_alive_tradeoff.png").stat().st_size > 5000
    report = (out / "report.md").read_text()
    assert "(keep_alive_tradeoff.png)" in report and "keep-alives fixed:0, fixed:600." in report
    for keep_alive, label in (("fixed:0", "fixed_0"), ("fixed:600", "fixed_600")):
        assert f"### Keep-alive {keep_alive}\n" in report
        assert (out / f"ttft_cdf-{label}.png").is_file() and f"(ttft_cdf-{label}.png)" in report
    table = read_runs(tmp_path / "s").table
    cold = table.groupby("keep_alive")["cold_start_ratio"].mean()
    assert cold["fixed:0"] > cold["fixed:600"]  # what the figure shows: warm instances wait
    # A sweep under one keep-alive gets no trade-off figure: one point per policy is no curve.
    assert main(["report", str(sweep_dir), "-o", str(tmp_path / "one")]) == 0
    assert not (tmp_path / "one" / "keep_alive_tradeoff.png").exists()
    assert "Keep-alive" not in (tmp_path / "one" / "report.md").read_text()
