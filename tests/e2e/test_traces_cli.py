"""`python -m traces stats|convert|generate` and `python -m sim run --trace` on every format:
each sample round-trips to the canonical form and replays in the simulator."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from refusal import refused

import traces
from sim.runner.cli import main as sim_main
from thaw_kernel import seeds
from traces.catalog import default_models
from traces.cli import main

DATA = Path(__file__).parents[1] / "data" / "traces"
SAMPLE = DATA / "azure-functions-2019-sample" / "invocations.csv"
FILES = [
    DATA / "canonical.csv",
    DATA / "azure-llm-2023.csv",
    DATA / "azure-llm-2024.csv",
    DATA / "azure-multimodal-2025.csv",
    DATA / "processed.csv",
    DATA / "azure-functions-2019.csv",
    DATA / "azure-functions-2021.csv",
    SAMPLE,
    traces.default_trace(),
]
MODELS = ["m0", "m1", "m2"]


def run(main_, args, capsys):
    status = main_([str(a) for a in args])
    out, err = capsys.readouterr()
    assert status == 0, err
    return out


def assert_same_trace(a: pd.DataFrame, b: pd.DataFrame) -> None:
    """Equal columns, models compared as text (their categories may differ in order)."""
    assert list(a.columns) == list(b.columns)
    for column in a.columns:
        left, right = a[column], b[column]
        if column == "model":
            left, right = left.astype(str), right.astype(str)
        assert np.array_equal(left.to_numpy(), right.to_numpy()), column


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_stats_and_convert_round_trip(tmp_path, capsys, path):
    catalog = ["--models", ",".join(MODELS)]
    stats = json.loads(run(main, ["stats", path, "--json", *catalog], capsys))
    assert stats["format"] == traces.detect_format(path)
    for out in (tmp_path / "t.csv", tmp_path / "t.parquet"):
        run(main, ["convert", path, "-o", out, *catalog], capsys)
        again = json.loads(run(main, ["stats", out, "--json", *catalog], capsys))
        assert again["format"] == "canonical"
        for key in ("rows", "duration_s", "mean_rps", "models", "input_tokens"):
            assert again[key] == pytest.approx(stats[key], rel=1e-12)
        original = traces.read(path, MODELS, seeds.rng(0, "trace")).frame
        converted = traces.read(out, MODELS, seeds.rng(0, "trace")).frame
        assert_same_trace(original, converted)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv", "t.parquet"]


def test_stats_text_and_json_through_a_real_process(tmp_path):
    path = DATA / "azure-llm-2023.csv"
    result = subprocess.run([sys.executable, "-m", "traces", "stats", str(path), "--json"],
                            capture_output=True, text=True)  # fmt: skip
    assert result.returncode == 0 and result.stderr == ""
    stats = json.loads(result.stdout)
    assert stats["rows"] == 4 and stats["out_of_order_rows"] == 1
    assert stats["duration_s"] == pytest.approx(13.31941)
    assert stats["mean_rps"] == pytest.approx(4 / 13.31941)
    text = subprocess.run([sys.executable, "-m", "traces", "stats", str(path)],
                          capture_output=True, text=True).stdout  # fmt: skip
    assert "azure-llm-2023" in text and "out-of-order rows" in text


def test_convert_notes_sorted_rows_and_applies_options(tmp_path, capsys):
    status = main(["convert", str(DATA / "azure-llm-2023.csv"), "-o", str(tmp_path / "o.csv"),
                   "--models", "a,b", "--remap", "b=a", "--compress", "2"])  # fmt: skip
    assert status == 0
    assert capsys.readouterr().err == "note: sorted 1 out-of-order rows\n"
    frame = pd.read_csv(tmp_path / "o.csv")
    assert set(frame["model"]) == {"a"} and frame["arrival_s"].max() == pytest.approx(13.31941 / 2)


def test_functions_options_reach_the_trace(tmp_path, capsys):
    base = ["stats", SAMPLE, "--json", "--window", "0:600", "--models", "m0,m1,m2"]
    uniform = json.loads(run(main, base, capsys))
    scaled = json.loads(run(main, [*base, "--scale", "0.5", "--placement", "gamma", "--cv", "4"],
                            capsys))  # fmt: skip
    assert uniform["duration_s"] < 600
    assert scaled["rows"] == pytest.approx(uniform["rows"] / 2, rel=0.1)
    assert scaled["interarrival_cv"] > 2 * uniform["interarrival_cv"]
    popular = json.loads(run(main, [*base, "--mapping", "popularity"], capsys))
    assert max(popular["models"], key=popular["models"].get) == "m0"


def test_generate_writes_the_requested_workload(tmp_path, capsys):
    out = tmp_path / "g.parquet"
    run(main, ["generate", "--rate", "20", "--duration", "3000", "--arrivals", "gamma",
               "--cv", "2", "--tokens", "lognormal:500,1,50,1", "--seed", "3", "-o", out,
               "--models", "x,y,z"], capsys)  # fmt: skip
    stats = json.loads(run(main, ["stats", out, "--json", "--models", "x,y,z"], capsys))
    assert stats["format"] == "canonical"
    assert stats["mean_rps"] == pytest.approx(20, rel=0.05)
    assert stats["interarrival_cv"] == pytest.approx(2, rel=0.1)
    assert stats["models"]["x"] > stats["models"]["y"] > stats["models"]["z"]
    run(main, ["generate", "--rate", "5", "--requests", "100", "-o", tmp_path / "n.csv"], capsys)
    assert len(pd.read_csv(tmp_path / "n.csv")) == 100


@pytest.mark.parametrize("path", FILES[:7], ids=lambda p: p.name)
def test_sim_run_replays_every_format(tmp_path, capsys, path, repo_root):
    trace = path
    if path.name == "canonical.csv":  # its models must be in the simulator's catalog
        trace = tmp_path / "c.csv"
        frame = pd.read_csv(path).assign(model=["opt-6.7b", "opt-13b", "llama-2-7b"])
        frame.to_csv(trace, index=False)
    out = tmp_path / "run"
    run(sim_main, ["run", "--trace", trace, "--out", out, "--quiet"], capsys)
    requests = pd.read_parquet(out / "requests.parquet")
    expected = traces.read(trace, default_models(), seeds.rng(0, "trace")).frame
    assert requests["arrival_s"].tolist() == expected["arrival_s"].tolist()
    assert (requests["status"] == "done").all()


def test_sim_run_takes_the_mapping_options_and_matches_a_converted_trace(tmp_path, capsys):
    options = ["--window", "0:300", "--scale", "0.5", "--mapping", "popularity",
               "--placement", "even", "--seed", "4"]  # fmt: skip
    result = subprocess.run(
        [sys.executable, "-m", "sim", "run", "--trace", str(SAMPLE), *options,
         "--out", str(tmp_path / "direct"), "--quiet"], capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    run(main, ["convert", SAMPLE, "-o", tmp_path / "c.parquet", *options], capsys)
    run(sim_main, ["run", "--trace", tmp_path / "c.parquet", "--seed", "4",
                   "--out", tmp_path / "converted", "--quiet"], capsys)  # fmt: skip
    direct = pd.read_parquet(tmp_path / "direct" / "requests.parquet")
    converted = pd.read_parquet(tmp_path / "converted" / "requests.parquet")
    assert len(direct) > 1000
    pd.testing.assert_frame_equal(direct, converted)
    assert np.all(direct["arrival_s"] < 300)


def test_sim_run_honours_a_forced_format(tmp_path, capsys):
    args = ["run", "--trace", str(DATA / "azure-llm-2023.csv"), "--out", str(tmp_path / "r")]
    assert sim_main([*args, "--format", "processed", "--quiet"]) == 2
    assert "missing column(s) arrived_at" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()
    assert sim_main([*args, "--format", "azure-llm-2024", "--quiet"]) == 0


def test_a_file_name_holding_a_nul_byte_is_refused_in_one_line(tmp_path, capsys):
    out = tmp_path / "t.csv"
    argv = ["generate", "--rate", "1", "--requests", "5", "--cluster", "\x00", "-o", str(out)]
    refused(capsys, main, argv, "NUL byte", keeps=tmp_path)
