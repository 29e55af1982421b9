"""`python -m sim run` end to end, as a user runs it: real processes, real files."""

import json
import subprocess
import sys

import pandas as pd
import pytest
from refusal import assert_one_line, refused, tree

from sim.runner.cli import main


def sim(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "sim", *args], cwd=cwd, capture_output=True, text=True
    )


def summary(path):
    return json.loads((path / "summary.json").read_text())


def test_help_documents_every_option(tmp_path):
    result = sim("run", "--help", cwd=tmp_path)
    assert result.returncode == 0
    for option in ("--policy", "--queue", "--trace", "--cluster", "--seed", "--out", "--quiet"):
        assert option in result.stdout
    assert "random" in result.stdout and "locality" in result.stdout


def test_a_default_run_writes_a_complete_run_directory(tmp_path):
    result = sim("run", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "TTFT p99" in result.stdout and result.stderr == ""  # no bar: not a terminal
    out = tmp_path / "runs" / "locality-seed0"
    s = summary(out)
    for key in (
        "requests", "completed", "ttft_p50_s", "ttft_p90_s", "ttft_p99_s", "ttft_mean_s",
        "e2e_p99_s", "loads_by_tier", "migrations", "gpu_seconds", "sim_wall_s",
        "requests_per_wall_s", "policy", "seed", "versions", "config_sha256", "trace",
    ):  # fmt: skip
        assert key in s
    assert (s["keep_alive"], s["prewarms"], s["prewarm_hits"]) == ("fixed", 0, 0)
    assert s["requests"] == s["completed"] == 8819
    requests = pd.read_parquet(out / "requests.parquet")
    assert len(requests) == 8819 and (requests["status"] == "done").all()
    parts = requests[["queue_s", "startup_s", "prefill_s"]].sum(axis=1)
    assert (parts - requests["ttft_s"]).abs().max() < 1e-9
    files = [".thaw-output", "config.toml", "instances.parquet", "requests.parquet", "summary.json"]
    assert sorted(p.name for p in out.iterdir()) == files


@pytest.mark.slow
def test_same_seed_same_results_and_the_resolved_config_reproduces_the_run(tmp_path):
    for out in ("a", "b"):
        assert sim("run", "--seed", "5", "--out", out, "--quiet", cwd=tmp_path).returncode == 0
    a = pd.read_parquet(tmp_path / "a" / "requests.parquet")
    pd.testing.assert_frame_equal(a, pd.read_parquet(tmp_path / "b" / "requests.parquet"))
    again = sim(
        "run", "--seed", "5", "--cluster", "a/config.toml", "--out", "c", "--quiet", cwd=tmp_path
    )
    assert again.returncode == 0, again.stderr
    pd.testing.assert_frame_equal(a, pd.read_parquet(tmp_path / "c" / "requests.parquet"))
    other = pd.read_parquet(tmp_path / "a" / "requests.parquet")
    assert sim("run", "--seed", "6", "--out", "a", "--quiet", cwd=tmp_path).returncode == 0
    assert not other.equals(pd.read_parquet(tmp_path / "a" / "requests.parquet"))


@pytest.mark.slow
def test_locality_uses_local_tiers_and_beats_random_at_the_tail(tmp_path):
    """Locality beats random at the tail, over five seeds: single-seed p99s of this bursty,
    contended trace are noisy (see the README), so the median p99 is compared."""
    p99 = {}
    for policy in ("random", "locality"):
        values = []
        for seed in range(5):
            out = f"{policy}-{seed}"
            result = sim("run", "--policy", policy, "--seed", str(seed), "--out", out,
                         "--quiet", cwd=tmp_path)  # fmt: skip
            assert result.returncode == 0, result.stderr
            s = summary(tmp_path / out)
            assert s["completed"] == s["requests"]
            values.append(s["ttft_p99_s"])
            if policy == "locality":
                assert s["loads_by_tier"]["dram"] > 0 and s["loads_by_tier"]["ssd"] > 0
        p99[policy] = sorted(values)[2]
    assert p99["locality"] <= p99["random"]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--policy", "clairvoyant"], "unknown policy 'clairvoyant'"),
        (["--queue", "lifo"], "--queue: unknown queue discipline 'lifo'"),
        (["--keep-alive", "lru"], "--keep-alive: unknown keep-alive policy 'lru'"),
        (["--keep-alive", "fixed:soon"], "--keep-alive: fixed: expected a number from 0"),
        (["--keep-alive", "histogram:margin=2"], "--keep-alive: margin: expected a number"),
        (["--keep-alive", "histogram:head"], "--keep-alive: expected key=value, got 'head'"),
        (["--keep-alive", "greedy-dual:9"], "--keep-alive: greedy-dual takes no parameters"),
        (["--cluster", "lru.toml"], "lru.toml: keep_alive: unknown keep-alive policy 'lru'"),
        (["--cluster", "lifo.toml"], "lifo.toml: queue: unknown queue discipline 'lifo'"),
        (["--trace", "missing.csv"], "missing.csv: no such file"),
        (["--cluster", "missing.toml"], "missing.toml: no such file"),
        (["--cluster", "bad.toml"], "bad.toml: servers[0].gpus: expected a positive integer"),
        (["--trace", "bad.csv"], "bad.csv: line 3: output_tokens must be an integer >= 1"),
        (["--seed", "-1"], "--seed: expected an integer from 0 to 9223372036854775807"),
        (["--seed", str(2**64)], "--seed: expected an integer from 0 to"),
        (["--seed", "one"], "invalid int value"),
        (["--out", "mine"], "mine: exists and is not a thaw run directory"),
    ],
)
def test_bad_input_gets_one_line_exit_2_and_writes_nothing(
    tmp_path, capsys, monkeypatch, args, expected
):
    bad_inputs(tmp_path)
    monkeypatch.chdir(tmp_path)
    refused(capsys, main, ["run", *args], expected, keeps=tmp_path)


def test_a_real_process_refusing_bad_input_exits_2_with_one_line(tmp_path):
    bad_inputs(tmp_path)
    before = tree(tmp_path)
    result = sim("run", "--trace", "bad.csv", cwd=tmp_path)
    assert_one_line(result.returncode, result.stdout, result.stderr, "bad.csv: line 3")
    assert tree(tmp_path) == before


def bad_inputs(folder):
    """Bad files to name, and a folder of the user's that looks like nothing of thaw's."""
    (folder / "bad.toml").write_text("[[servers]]\ngpus = 0\n")
    (folder / "lifo.toml").write_text('queue = "lifo"\n')
    (folder / "lru.toml").write_text('keep_alive = "lru"\n')
    (folder / "bad.csv").write_text(
        "arrival_s,model,input_tokens,output_tokens\n0,opt-6.7b,5,5\n1,opt-6.7b,5,0\n"
    )
    (folder / "mine").mkdir()
    (folder / "mine" / "notes.txt").write_text("precious")
