"""`python -m sim sweep`: the grid, resuming after a kill, the table, the Ray backend, bad input."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import ray
from refusal import refused

import traces
from sim.api import replay
from sim.config import read_config
from sim.runner.cli import _keep_alive_list, main
from sim.runner.sweep.driver import run_sweep
from sim.runner.sweep.grid import RunPoint, escape_spec, read_sweep
from sim.schema import SWEEP_TABLE
from thaw_kernel import seeds
from thaw_kernel.errors import InputError

GRID = ["--policies", "random,locality", "--rate-scales", "1,2", "--seeds", "2"]


def trace_head(directory: Path, requests: int) -> Path:
    """The first `requests` requests of the bundled trace, in its own format."""
    lines = traces.default_trace().read_text().splitlines(keepends=True)
    path = directory / f"head{requests}.csv"
    path.write_text("".join(lines[: requests + 1]))
    return path


def finished(out: Path) -> dict[str, os.stat_result]:
    """Run directories in place (not the hidden ones a run is staged in) with a summary."""
    runs = (out / "runs").glob("*/summary.json")
    return {p.parent.name: p.stat() for p in runs if not p.parent.name.startswith(".")}


def test_a_killed_sweep_resumes_without_repeating_finished_runs(tmp_path):
    trace = trace_head(tmp_path, 2000)
    command = [sys.executable, "-m", "sim", "sweep", *GRID, "--traces", str(trace),
               "--jobs", "2", "--out", "sw"]  # fmt: skip
    process = subprocess.Popen(command, cwd=tmp_path, start_new_session=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 60
    while len(finished(tmp_path / "sw")) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    os.killpg(process.pid, signal.SIGKILL)  # the sweep and its workers, mid-run
    process.wait()
    before = finished(tmp_path / "sw")
    assert 2 <= len(before) < 8
    assert not (tmp_path / "sw" / SWEEP_TABLE).exists()

    again = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert f"{8 - len(before)} runs done, {len(before)} already finished" in again.stdout
    after = finished(tmp_path / "sw")
    assert len(after) == 8
    for name, stat in before.items():  # not rewritten: same file, same modification time
        assert (after[name].st_ino, after[name].st_mtime_ns) == (stat.st_ino, stat.st_mtime_ns)
    assert sorted(p.name for p in (tmp_path / "sw" / "runs").iterdir()) == sorted(after)
    table = pd.read_parquet(tmp_path / "sw" / SWEEP_TABLE)
    assert len(table) == 8 and table["completed"].eq(2000).all()
    coordinates = table[["policy", "rate_scale", "seed"]].drop_duplicates()
    assert len(coordinates) == 8 and set(table["trace"]) == {"head2000"}
    third = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True)
    assert "0 runs done, 8 already finished" in third.stdout


def test_a_resumed_sweep_clears_the_scratch_a_killed_writer_leaves(tmp_path, monkeypatch):
    """A kill can land between a probe's mkdir and rmdir, or mid-staging: the next run of
    the sweep removes every such entry of thaw's own, and nothing else hidden."""
    trace = trace_head(tmp_path, 200)
    command = ["sweep", "--policies", "random", "--traces", str(trace), "--out", "sw"]
    monkeypatch.chdir(tmp_path)
    assert main(command) == 0
    runs = tmp_path / "sw" / "runs"
    scratch = [".thaw-probe-0123456789ab", ".x.tmp-0123456789ab", ".x.old-0123456789ab"]
    for name in [*scratch, ".users-own"]:
        (runs / name).mkdir()
    assert main(command) == 0
    hidden = sorted(p.name for p in runs.iterdir() if p.name.startswith("."))
    assert hidden == [".users-own"]


def test_scale_one_reproduces_sim_run_and_scale_two_compresses_time(tmp_path):
    trace = trace_head(tmp_path, 300)
    sweep = read_sweep(None, {"policies": ["locality"], "seeds": [3], "rate_scales": [1, 2],
                              "traces": [str(trace)], "out": tmp_path / "sw"})  # fmt: skip
    outcome = run_sweep(sweep)
    assert (outcome.ran, outcome.skipped) == (2, 0)
    sim = replay(read_config(None), trace, "locality", 3)
    one = pd.read_parquet(tmp_path / "sw" / "runs" / "locality-head300-x1-default-seed3"
                          / "requests.parquet")  # fmt: skip
    pd.testing.assert_frame_equal(one, sim.table.frame())
    two = pd.read_parquet(tmp_path / "sw" / "runs" / "locality-head300-x2-default-seed3"
                          / "requests.parquet")  # fmt: skip
    assert (two["arrival_s"] == one["arrival_s"] / 2).all()
    assert two["model"].tolist() == one["model"].tolist()  # same draws, faster arrivals
    summary = json.loads((tmp_path / "sw" / "runs" / "locality-head300-x2-default-seed3"
                          / "summary.json").read_text())  # fmt: skip
    assert summary["sweep"]["rate_scale"] == 2.0 and summary["seed"] == 3


def test_a_rate_scale_divides_arrival_times_only():
    trace = traces.read(traces.default_trace(), ["m"], seeds.rng(0, "trace")).frame
    scaled = traces.read(
        traces.default_trace(), ["m"], seeds.rng(0, "trace"), options=traces.Options(compress=4.0)
    ).frame
    assert (scaled["arrival_s"] * 4 == trace["arrival_s"]).all()
    pd.testing.assert_frame_equal(scaled.drop(columns="arrival_s"), trace.drop(columns="arrival_s"))


def test_a_sweep_file_with_paths_relative_to_it_and_options_over_it(tmp_path):
    (tmp_path / "study").mkdir()
    trace = trace_head(tmp_path / "study", 50)
    (tmp_path / "study" / "s.toml").write_text(
        f'policies = ["random"]\nseeds = [4, 7]\ntraces = ["{trace.name}"]\nout = "result"\n'
    )
    sweep = read_sweep(tmp_path / "study" / "s.toml", {"seeds": 1})
    assert sweep.seeds == (0,) and sweep.traces == (trace.resolve(),)
    assert sweep.out == tmp_path / "study" / "result"
    assert [p.name for p in sweep.points()] == ["random-head50-x1-default-seed0"]


def test_help_documents_every_option(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["sweep", "--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    for option in (
        "SWEEP.toml",
        "--policies",
        "--seeds",
        "--rate-scales",
        "--traces",
        "--clusters",
        "--backend",
        "--jobs",
        "--ray-address",
        "--keep-alive",
        "--keep-alives",
        "--out",
        "--quiet",
    ):
        assert option in text


@pytest.mark.parametrize(
    ("args", "toml", "expected"),
    [
        (["--policies", "random,clairvoyant"], "", "--policies: unknown policy 'clairvoyant'"),
        (["s.toml"], 'policies = ["fifo"]\n', "s.toml: policies: unknown policy 'fifo'"),
        (["s.toml"], "seedz = 3\n", "s.toml: unknown key 'seedz'"),
        (["--seeds", "0"], "", "--seeds: expected a count >= 1"),
        # Beyond 64 bits a seed once ended in an OverflowError traceback.
        (["s.toml"], "seeds = [99999999999999999999999]\n", "s.toml: seeds: expected seeds from"),
        (["--rate-scales", "1,0"], "", "--rate-scales: expected numbers from 1e-06 to 1e+06"),
        # A scale that drove arrivals past every bound once ended in "invariant violated".
        (["s.toml"], "rate_scales = [1e-300]\n", "s.toml: rate_scales: expected numbers from"),
        (["--rate-scales", "1,fast"], "", "expected a comma-separated list of float"),
        (["--traces", "missing.csv"], "", "--traces: missing.csv: no such file"),
        (["--clusters", "missing.toml"], "", "--clusters: missing.toml: no such file"),
        (["--clusters", "bad.toml"], "", "bad.toml: servers[0].gpus: expected a positive"),
        (["--traces", "a/t.csv,b/t.csv"], "", "have the same name 't'"),
        (["--out", "mine"], "", "mine: exists and is not a thaw sweep directory"),
        (["--jobs", "0"], "", "--jobs: expected a positive integer"),
        (["--keep-alive", "lru"], "", "--keep-alive: unknown keep-alive policy 'lru'"),
        (["s.toml"], 'keep_alive = "fixed:-1"\n', "s.toml: keep_alive: fixed: expected a"),
        (["--keep-alives", "fixed:60,lru"], "", "--keep-alives: lru: unknown keep-alive policy"),
        (["--keep-alives", "fixed:6,fixed:6"], "", "--keep-alives: repeated entries"),
        (["--keep-alives", "histogram:bin_s=0"], "", "histogram:bin_s=0: bin_s: expected a"),
        (["s.toml"], 'keep_alives = "fixed"\n', "s.toml: keep_alives: expected a non-empty list"),
        (["s.toml"], 'keep_alives = ["fixed:1"]\nkeep_alive = "fixed"\n', "give one, not both"),
        (["--keep-alive", "fixed", "--keep-alives", "fixed:1,fixed:2"], "", "give one, not both"),
        (["--backend", "ray", "--ray-address", "127.0.0.1:1"], "", "127.0.0.1:1: cannot connect"),
    ],
)
def test_bad_input_gets_one_line_exit_2_and_writes_nothing(
    tmp_path, monkeypatch, capsys, args, toml, expected
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.toml").write_text(toml)
    (tmp_path / "bad.toml").write_text("[[servers]]\ngpus = 0\n")
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
        trace_head(tmp_path, 5).rename(tmp_path / sub / "t.csv")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("precious")
    refused(capsys, main, ["sweep", *args, "--quiet"], expected, keeps=tmp_path)


@pytest.fixture(scope="module")
def local_ray():
    """A local Ray on 2 CPUs, for this module's Ray tests only (it takes seconds to start)."""
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    yield
    ray.shutdown()


@pytest.mark.slow
def test_ray_and_local_backends_write_the_same_runs(tmp_path, local_ray):
    grid = {"policies": ["random", "locality"], "rate_scales": [1, 2], "seeds": 2,
            "traces": [str(trace_head(tmp_path, 300))]}  # fmt: skip
    on_ray = run_sweep(read_sweep(None, {**grid, "backend": "ray", "out": tmp_path / "ray"}))
    local = run_sweep(read_sweep(None, {**grid, "jobs": 1, "out": tmp_path / "local"}))
    assert (on_ray.ran, local.ran) == (8, 8)
    table = pd.read_parquet(tmp_path / "ray" / SWEEP_TABLE)
    assert len(table) == 8 and ray.is_initialized()  # the sweep left the caller's Ray running
    for run in table["run"]:
        pd.testing.assert_frame_equal(
            pd.read_parquet(tmp_path / "ray" / run / "requests.parquet"),
            pd.read_parquet(tmp_path / "local" / run / "requests.parquet"),
        )
    again = run_sweep(read_sweep(None, {**grid, "backend": "ray", "out": tmp_path / "ray"}))
    assert (again.ran, again.skipped) == (0, 8)


def test_run_names_are_unique_even_when_labels_hold_the_separator(tmp_path):
    one = RunPoint("random", "a", "", 1.0, "b-x1-c", None, 0)
    two = RunPoint("random", "a-x1-b", "", 1.0, "c", None, 0)
    assert one.name != two.name
    assert one.name == "random-a-x1-b%2Dx1%2Dc-seed0"
    assert RunPoint("random", "t", "", 1e-5, "c", None, 0).name == "random-t-x1e%2D05-c-seed0"


@pytest.mark.parametrize(
    ("traces", "expected"),
    [
        ("a/t.csv,b/T.csv", "have the same name 'T'"),
        ("a/t.csv,./a/t.csv", "the same file is listed twice"),
    ],
)
def test_traces_that_would_share_run_directories_are_refused(tmp_path, monkeypatch, traces,
                                                              expected):  # fmt: skip
    monkeypatch.chdir(tmp_path)
    for sub, name in (("a", "t.csv"), ("b", "T.csv")):
        (tmp_path / sub).mkdir()
        trace_head(tmp_path, 5).rename(tmp_path / sub / name)
    with pytest.raises(InputError, match=expected):
        read_sweep(None, {"traces": traces.split(",")})


KEEP_ALIVES = "fixed:0,histogram:bin_s=1,min_samples=1"


def test_a_sweep_over_two_keep_alives_writes_distinct_runs_and_a_keep_alive_column(tmp_path):
    trace = trace_head(tmp_path, 60)
    argv = ["sweep", "--policies", "random", "--seeds", "1", "--traces", str(trace), "--jobs",
            "1", "--keep-alives", KEEP_ALIVES, "--out", str(tmp_path / "s"), "--quiet"]  # fmt: skip
    assert main(argv) == 0
    names = sorted(finished(tmp_path / "s"))
    assert names == [
        "random-head60-x1-default-fixed%3A0-seed0",
        "random-head60-x1-default-histogram%3Abin_s=1,min_samples=1-seed0",
    ]
    table = pd.read_parquet(tmp_path / "s" / SWEEP_TABLE).set_index("keep_alive")
    assert list(table.index) == ["fixed:0", "histogram:bin_s=1,min_samples=1"]
    for keep_alive, row in table.iterrows():
        assert (
            f'keep_alive = "{keep_alive}"'
            in (tmp_path / "s" / row["run"] / "config.toml").read_text()
        )
    idle = table["gpu_seconds_by_state.idle_warm"]
    assert idle["fixed:0"] == 0 < idle["histogram:bin_s=1,min_samples=1"]  # they ran apart
    assert "keep_alives = [" in (tmp_path / "s" / "sweep.toml").read_text()
    # The resolved grid runs again as it is: nothing left to do.
    again = run_sweep(read_sweep(tmp_path / "s" / "sweep.toml", {}))
    assert (again.ran, again.skipped) == (0, 2)


def test_one_keep_alive_keeps_the_run_names_of_a_sweep_without_the_axis(tmp_path):
    trace = trace_head(tmp_path, 50)
    grid = {"policies": ["random"], "seeds": 1, "traces": [str(trace)], "jobs": 1}
    expected = ["random-head50-x1-default-seed0"]
    for one in ({}, {"keep_alive": "fixed:0"}, {"keep_alives": ["fixed:0"]}):
        assert [p.name for p in read_sweep(None, {**grid, **one}).points()] == expected
    argv = ["sweep", "--policies", "random", "--seeds", "1", "--traces", str(trace), "--jobs",
            "1", "--keep-alive", "fixed:0", "--out", str(tmp_path / "s"), "--quiet"]  # fmt: skip
    assert main(argv) == 0
    assert sorted(finished(tmp_path / "s")) == expected
    table = pd.read_parquet(tmp_path / "s" / SWEEP_TABLE)
    assert table["keep_alive"].tolist() == ["fixed:0"]
    assert table["gpu_seconds_by_state.idle_warm"].tolist() == [0]
    written = (tmp_path / "s" / "sweep.toml").read_text()
    assert 'keep_alive = "fixed:0"' in written and "keep_alives" not in written


def test_keep_alive_fields_of_run_names_are_filesystem_safe_and_tell_specs_apart():
    specs = ["greedy-dual", "fixed:60", "fixed:600", "histogram:bin_s=1,min_samples=1",
             "histogram:margin=0.2", "fixed:1e%2D3"]  # fmt: skip
    names = [RunPoint("random", "t", "", 1.0, "c", None, 0, spec, True).name for spec in specs]
    assert len({name.casefold() for name in names}) == len(specs)
    for name, spec in zip(names, specs, strict=True):
        assert not set(name) & set(':/\\<>"|?* ')
        assert name.split("-")[-2] == escape_spec(spec)  # one field, no "-" inside
    assert names[0] == "random-t-x1-c-greedy%2Ddual-seed0"


def test_keep_alives_on_the_command_line_split_at_commas_between_specs():
    assert _keep_alive_list("fixed:60,fixed:600,histogram,greedy-dual") == [
        "fixed:60", "fixed:600", "histogram", "greedy-dual"
    ]  # fmt: skip
    assert _keep_alive_list("histogram:bin_s=1,min_samples=1,fixed:60") == [
        "histogram:bin_s=1,min_samples=1", "fixed:60"
    ]  # fmt: skip
