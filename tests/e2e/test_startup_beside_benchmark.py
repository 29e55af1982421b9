"""benchmarks/startup_beside.py end to end on a small checkpoint: one row per kind, each
figure measured (no timing is asserted: the machine's other work moves them), and the
checkpoint removed."""

import json
import subprocess
import sys

import pytest

KINDS = ["alone", "spin", "copy", "fault", "load", "download"]


@pytest.mark.slow
def test_every_kind_is_timed_and_nothing_is_left(repo_root, tmp_path):
    printed = subprocess.run(
        [
            sys.executable, str(repo_root / "benchmarks" / "startup_beside.py"),
            "--dir", str(tmp_path), "--size", "32MB", "--runs", "1", "--json",
        ],
        check=True, capture_output=True, text=True, cwd=repo_root,
    ).stdout  # fmt: skip
    results = json.loads(printed)
    assert list(results) == KINDS
    assert results["alone"]["ratio"] == 1.0
    for kind in KINDS:
        row = results[kind]
        assert row["wall_s"] > 0 and row["cpu_s"] > 0 and len(row["walls_s"]) == 1
        assert row["involuntary_switches"] >= 0
    assert results["spin"]["other_cores"] > 0.1  # the loop ran beside the start-up
    assert results["download"]["other_cores"] > 0  # the client and the store worked
    assert list(tmp_path.iterdir()) == []
