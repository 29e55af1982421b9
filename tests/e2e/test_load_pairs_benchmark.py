"""benchmarks/load_pairs.py end to end on the decoders' own checkpoints: every kind timed,
every figure measured (no timing is asserted: the machine's other work moves them), and
nothing left on disk or in /dev/shm; a missing --dir refused in one line."""

import json
import math
import subprocess
from pathlib import Path

import pytest
from benchmark_support import run_benchmark, shm_entries

KINDS = [
    "engine alone small",
    "engine alone medium",
    "engine pair",
    "reader alone small",
    "reader alone medium",
    "reader pair",
]
RATIOS = ["pair_rate_engine_over_reader", "alone_cpu_per_byte_engine_over_reader"]
# What the benchmark makes there: its DRAM caches and its engines' staging. (Its readers'
# scratch, `thaw-reader-*`, cannot be told from other processes' readers': not checked.)
MINE = "load-pairs-"


def _run(repo_root: Path, *args: str) -> subprocess.CompletedProcess:
    return run_benchmark(repo_root, "load_pairs.py", *args)


def _mine() -> set[str]:
    return shm_entries(MINE)


@pytest.mark.slow
def test_every_kind_is_timed_and_nothing_is_left(repo_root, tmp_path):
    before = _mine()
    done = _run(repo_root, "--dir", str(tmp_path), "--small", "--rounds", "1", "--json")
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    assert list(results) == ["rounds", "bytes", "kinds", *RATIOS]
    assert results["rounds"] == 1
    assert list(results["bytes"]) == ["small", "medium"]
    assert all(size > 10**7 for size in results["bytes"].values())
    assert list(results["kinds"]) == KINDS
    figures = [results[ratio] for ratio in RATIOS]
    for row in results["kinds"].values():
        assert list(row) == ["load_s", "gb_per_s", "cpu_s_per_gb", "loads_s"]
        assert len(row["loads_s"]) == 1
        figures += [row["load_s"], row["gb_per_s"], row["cpu_s_per_gb"]]
    assert all(math.isfinite(figure) and figure > 0 for figure in figures)
    assert list(tmp_path.iterdir()) == []
    assert _mine() <= before


def test_a_missing_dir_is_one_line_and_exit_2(repo_root, tmp_path):
    done = _run(repo_root, "--dir", str(tmp_path / "absent"), "--small")
    assert done.returncode == 2 and done.stdout == ""
    assert "absent: no such directory" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
