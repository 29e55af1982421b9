"""benchmarks/download_beside_load.py end to end on the decoders' own checkpoints: every
kind timed through the real store, every figure measured (no timing is asserted: the
machine's other work moves them), and nothing left on disk or in /dev/shm; a missing
--dir refused in one line."""

import json
import math
import subprocess
from pathlib import Path

import pytest
from benchmark_support import run_benchmark, shm_entries

from calibration.measure.page_reporting import free_page_reporting

MINE = "download-beside-"  # what the benchmark makes there: its store and DRAM caches
FIGURES = ["download_s", "load_after_download_s", "load_s", "deletion_s"]
# Which figures each kind has: a download and the load after it, an SSD load, or both; a
# load and the deletion beside it.
PRESENT = {
    "download alone": [True, True, False, False],
    "load alone": [False, False, True, False],
    "both": [True, True, True, False],
    "load beside a deletion": [False, False, True, True],
}


def _run(repo_root: Path, *args: str) -> subprocess.CompletedProcess:
    return run_benchmark(repo_root, "download_beside_load.py", *args)


def _mine() -> set[str]:
    return shm_entries(MINE)


@pytest.mark.slow
def test_every_kind_is_timed_and_nothing_is_left(repo_root, tmp_path):
    before = _mine()
    done = _run(repo_root, "--dir", str(tmp_path), "--small", "--rounds", "1", "--json")
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    assert list(results) == [
        "rounds", "bytes", "free_page_reporting_order", "kinds", "both_over_alone",
        "deletion_over_alone",
    ]  # fmt: skip
    assert results["rounds"] == 1
    assert list(results["bytes"]) == ["small", "medium"]
    assert all(size > 10**7 for size in results["bytes"].values())
    reporting = free_page_reporting()
    assert results["free_page_reporting_order"] == (reporting and reporting.order)
    assert list(results["kinds"]) == list(PRESENT)
    for kind, present in PRESENT.items():
        row = results["kinds"][kind]
        assert len(row["rounds"]) == 1
        for figure, there in zip(FIGURES, present, strict=True):
            value = row[figure]
            assert (value is not None and math.isfinite(value) and value > 0) == there
    assert list(results["both_over_alone"]) == FIGURES[:3]
    assert all(ratio > 0 for ratio in results["both_over_alone"].values())
    assert results["deletion_over_alone"] > 0
    assert list(tmp_path.iterdir()) == []
    assert _mine() <= before


def test_a_missing_dir_is_one_line_and_exit_2(repo_root, tmp_path):
    done = _run(repo_root, "--dir", str(tmp_path / "absent"), "--small")
    assert done.returncode == 2 and done.stdout == ""
    assert "absent: no such directory" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
