"""Hostile and careless input the corpus (tests/data/bad/) cannot hold as small files:
options beyond their bounds, devices and FIFOs where a file belongs, Parquet files and
fields of hundreds of kilobytes. Each is refused in one line naming the option, file and
line or key, exit status 2, nothing written; what a careless user may write (a byte-order
mark, a space after a column name) simply works."""

import json
import math
import os
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from refusal import refused

from sim.results.run_dir import write_run
from sim.runner.cli import main as sim
from thaw_kernel.errors import InputError
from traces.cli import main as traces

HEADER = "arrival_s,model,input_tokens,output_tokens"
TRACE = f"{HEADER}\n0,opt-6.7b,5,5\n1,opt-6.7b,7,3\n"
CLUSTER = "keep_alive_s = 30.0\n"


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """A working folder holding a good trace and cluster, a FIFO, a directory, and a file
    of the user's that no refused command may touch."""
    monkeypatch.chdir(tmp_path)
    Path("t.csv").write_text(TRACE)
    Path("c.toml").write_text(CLUSTER)
    os.mkfifo("fifo")
    Path("folder").mkdir()
    Path("notes.txt").write_text("the user's own notes")
    return tmp_path


def run(*args: str) -> list[str]:
    return ["run", *args, "--out", "out", "--quiet"]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--tokens", "fixed:1e300,5"], "--tokens 'fixed:1e300,5': expected 2 positive numbers"),
        (["--cv", "1e300"], "--cv: expected 0.001 to 1000, got '1e300'"),
        (["--scale", "1e12", "--max-requests", "10"], "--scale: expected a number > 0 and <="),
        (["--replicate", "1e9"], "--replicate: expected 1 to 10000, got '1e9'"),
        (["--replicate", "1000000000"], "--replicate: expected 1 to 10000"),
        (["--tokens", "trace:missing.csv"], "--tokens: missing.csv: no such file"),
        (["--tokens", "trace:/dev/zero"], "/dev/zero: not a regular file"),
        (["--trace", "folder"], "folder: is a directory, not a file"),
        (["--cluster", "folder"], "folder: is a directory, not a file"),
        (["--profile", "folder"], "folder: is a directory, not a file"),
    ],
)
def test_options_beyond_their_bounds_are_refused_in_one_line(folder, capsys, args, expected):
    refused(capsys, sim, run("--trace", "t.csv", *args), expected, keeps=folder)


@pytest.mark.parametrize("flag", ["--trace", "--cluster", "--profile"])
@pytest.mark.parametrize("what", ["fifo", "/dev/zero", "/dev/urandom"])
def test_a_fifo_or_device_is_refused_by_name_without_reading_it(folder, capsys, flag, what):
    argv = ["--trace", "t.csv", flag, what] if flag != "--trace" else [flag, what]
    refused(capsys, sim, run(*argv), f"{what}: not a regular file", keeps=folder)


@pytest.mark.parametrize(
    ("main", "argv"),
    [
        (sim, ["sweep", "fifo", "--out", "sw", "--quiet"]),
        (sim, ["sweep", "/dev/zero", "--out", "sw", "--quiet"]),
        (traces, ["stats", "/dev/urandom"]),
        (traces, ["convert", "fifo", "-o", "c.csv"]),
    ],
)
def test_sweep_files_and_traces_that_are_devices_are_refused(folder, capsys, main, argv):
    refused(capsys, main, argv, f"{argv[1]}: not a regular file", keeps=folder)


@pytest.mark.parametrize(
    ("argv", "text", "expected"),
    [
        (["--seeds", "1000000000000"], "", "--seeds: expected at most 100000 seeds"),
        ([], "seeds = 1000000000000\n", "s.toml: seeds: expected at most 100000 seeds"),
    ],
)
def test_a_sweep_of_a_trillion_seeds_is_refused_before_it_starts(
    folder, capsys, argv, text, expected
):
    Path("s.toml").write_text(text)
    argv = ["sweep", "s.toml", *argv, "--traces", "t.csv", "--out", "sw", "--quiet"]
    refused(capsys, sim, argv, expected, keeps=folder)


def test_a_model_name_with_a_newline_and_an_escape_stays_on_one_line(folder, capsys):
    Path("c.toml").write_text('[models."evil\\n\\u001b[2J"]\ngpus = 1\n')
    err = refused(capsys, sim, run("--trace", "t.csv", "--cluster", "c.toml"), "c.toml: ")
    assert "evil\\n\\x1b[2J" in err and "\x1b" not in err


def _parquet(path: Path, **columns: pa.Array) -> None:
    base = {
        "arrival_s": pa.array([0.0, 1.0]),
        "model": pa.array(["opt-6.7b", "opt-6.7b"]),
        "input_tokens": pa.array([5, 5]),
        "output_tokens": pa.array([5, 5]),
    }
    table = pa.table({**base, **columns})
    pq.write_table(table, path)


def _duplicated_column(path: Path) -> None:
    arrays = [pa.array([0.0]), pa.array(["opt-6.7b"]), pa.array([5]), pa.array([5])]
    names = ["arrival_s", "model", "input_tokens", "output_tokens"]
    pq.write_table(pa.table([*arrays, pa.array([9])], names=[*names, "input_tokens"]), path)


HOSTILE_TRACES = {
    "parquet-model-not-utf8.parquet": (
        lambda p: _parquet(p, model=pa.array([b"opt-6.7b", b"\xff\xfe"], pa.binary())),
        "column model: not UTF-8 text",
    ),
    "parquet-duplicated-column.parquet": (_duplicated_column, "'input_tokens' appears twice"),
    "parquet-tokens-2-64-minus-1.parquet": (
        lambda p: _parquet(p, input_tokens=pa.array([5, 2**64 - 1], pa.uint64())),
        "input_tokens must be an integer >= 1 and <= 100000000000, got 18446744073709551615",
    ),
    "parquet-model-of-10k-characters.parquet": (
        lambda p: _parquet(p, model=pa.array(["opt-6.7b", "x" * 10_000])),
        "row 1: model name 'xxx",
    ),
    "csv-model-of-5-megabytes.csv": (
        lambda p: p.write_text(f"{TRACE}2,{'x' * 5_000_000},5,5\n"),
        "line 4: model name 'xxx",
    ),
    "parquet-infinite-arrival.parquet": (
        lambda p: _parquet(p, arrival_s=pa.array([0.0, math.inf])),
        "row 1: arrival_s must be a number >= 0 and <= 1e+10, got inf",
    ),
    # Past the csv module's field limit (128 Ki characters), in the header and in a row.
    "csv-column-name-of-200k-characters.csv": (
        lambda p: p.write_text(f"{HEADER},{'z' * 200_000}\n0,opt-6.7b,5,5,1\n"),
        "line 1: a column name is longer than 4096 characters",
    ),
    "csv-ragged-row-of-200k-characters.csv": (
        lambda p: p.write_text(f"{TRACE}2,opt-6.7b,5,5,{'y' * 200_000}\n"),
        "line 4: a field longer than 4096 characters",
    ),
    "csv-model-with-an-escape-sequence.csv": (
        lambda p: p.write_text(f'{HEADER}\n0,"opt\x1b[2J\nX",5,5\n'),
        "line 2: model 'opt\\x1b[2J\\nX' is not in the catalog",
    ),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_TRACES))
def test_a_hostile_trace_is_refused_in_one_line(folder, capsys, name):
    make, expected = HOSTILE_TRACES[name]
    make(folder / name)
    refused(capsys, sim, run("--trace", name), f"{name}: ", expected, keeps=folder)


def _summary(out: Path) -> dict:
    summary = json.loads((out / "summary.json").read_text())
    return {key: value for key, value in summary.items() if key != "trace" and "wall" not in key}


def test_a_byte_order_mark_and_spaces_after_column_names_change_nothing(folder):
    Path("careless.csv").write_bytes(b"\xef\xbb\xbf" + TRACE.replace(",", " ,", 3).encode())
    Path("careless.toml").write_bytes(b"\xef\xbb\xbf" + CLUSTER.encode())
    assert sim(["run", "--trace", "t.csv", "--cluster", "c.toml", "--out", "a", "--quiet"]) == 0
    argv = ["run", "--trace", "careless.csv", "--cluster", "careless.toml", "--out", "b"]
    assert sim([*argv, "--quiet"]) == 0
    assert _summary(folder / "a") == _summary(folder / "b")
    assert _summary(folder / "a")["completed"] == 2


def test_a_figure_that_overflowed_is_refused_and_nothing_is_written(tmp_path):
    import pandas as pd

    summary = {"completed": 1, "ttft": {"p99_s": math.inf}}
    with pytest.raises(InputError, match=r"summary.json: ttft.p99_s is not a finite number"):
        write_run(tmp_path / "run", pd.DataFrame(), pd.DataFrame(), summary, "")
    assert list(tmp_path.iterdir()) == []


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


DAMAGED_RUNS = {
    "summary is a FIFO": (lambda run: _fifo(run / "summary.json"), "summary.json: not a regular"),
    "requests not Parquet": (
        lambda run: (run / "requests.parquet").write_bytes(b"PAR1 garbage"),
        "requests.parquet: not a readable Parquet file",
    ),
    "requests is a FIFO": (lambda run: _fifo(run / "requests.parquet"), "requests.parquet: not"),
    "instances not Parquet": (
        lambda run: (run / "instances.parquet").write_bytes(b"garbage"),
        "instances.parquet: not a readable Parquet file",
    ),
    "config is a FIFO": (lambda run: _fifo(run / "config.toml"), "config.toml: not a regular"),
    "config not resolved": (
        lambda run: (run / "config.toml").write_text("x = 1\n"),
        "config.toml: not a resolved configuration",
    ),
    "summary nested deeply": (
        lambda run: (run / "summary.json").write_text("[" * 100_000 + "]" * 100_000),
        "summary.json: not valid JSON",
    ),
    "summary cut short": (
        lambda run: (run / "summary.json").write_text('{"schema_version": 1, "poli'),
        "summary.json: not valid JSON",
    ),
    "summary missing a key": (
        lambda run: _edit_summary(run, lambda s: s.pop("gpu_seconds")),
        "summary.json: gpu_seconds: missing",
    ),
    "summary with a string for a number": (
        lambda run: _edit_summary(run, lambda s: s.update(ttft_p99_s="fast")),
        "summary.json: ttft_p99_s: expected number, got 'fast'",
    ),
    "summary with NaN": (
        lambda run: _edit_summary(run, lambda s: s["loads_by_tier"].update(ssd=math.nan)),
        "summary.json: loads_by_tier.ssd: expected integer, got nan",
    ),
    "summary with NaN where nothing checks its type": (
        lambda run: _edit_summary(run, lambda s: s.update(wasted_tokens=math.inf)),
        "summary.json: wasted_tokens: inf is not a finite number",
    ),
    "summary not an object": (
        lambda run: (run / "summary.json").write_text("[1, 2]"),
        "summary.json: expected a JSON object, got list",
    ),
}


def _edit_summary(run: Path, change) -> None:
    """Change the run's summary.json by hand, as a user editing it would."""
    summary = json.loads((run / "summary.json").read_text())
    change(summary)
    (run / "summary.json").write_text(json.dumps(summary))


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("finished") / "run"
    assert sim(["run", "--max-requests", "20", "--out", str(out), "--quiet"]) == 0
    return out


def test_a_damaged_run_among_good_ones_is_named_never_dropped(folder, capsys, finished_run):
    from analysis.cli import main as analysis

    shutil.copytree(finished_run, folder / "runs" / "a")
    shutil.copytree(finished_run, folder / "runs" / "b")
    _edit_summary(folder / "runs" / "b", lambda s: s.pop("policy"))
    refused(capsys, analysis, ["report", "runs", "-o", "report"], "runs/b/summary.json: policy")


def test_a_run_still_being_staged_is_not_a_run(folder, capsys, finished_run):
    from analysis.cli import main as analysis

    shutil.copytree(finished_run, folder / "runs" / "a")
    staging = folder / "runs" / ".b.tmp-0123456789ab"  # sim.results.run_dir's staging name
    shutil.copytree(finished_run, staging)
    (staging / "summary.json").write_text('{"schema_ver')  # half written
    assert analysis(["report", "runs", "-o", "report"]) == 0
    capsys.readouterr()


@pytest.mark.parametrize("damage", sorted(DAMAGED_RUNS))
def test_a_damaged_run_directory_is_refused_by_the_report(folder, capsys, finished_run, damage):
    from analysis.cli import main as analysis

    run_dir = folder / "run"
    shutil.copytree(finished_run, run_dir)
    make, expected = DAMAGED_RUNS[damage]
    make(run_dir)
    refused(capsys, analysis, ["report", "run", "-o", "report"], expected, keeps=folder)
