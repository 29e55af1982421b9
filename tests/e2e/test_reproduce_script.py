"""The ServerlessLLM reproduction script runs end to end (a tiny grid)."""

import json
import subprocess
import sys

import pytest


@pytest.mark.slow
def test_the_reproduction_prints_every_cell_and_the_ratios(repo_root):
    out = subprocess.run(
        [
            sys.executable,
            str(repo_root / "benchmarks" / "reproduce_serverlessllm.py"),
            "--seeds", "1", "--rates", "1", "--minutes", "3", "--json",
        ],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    result = json.loads(out.stdout)
    assert len(result["cells"]) == 2 * 5  # two workloads, five policies
    assert {r["baseline"] for r in result["ratios"]} == {"random", "preemption"}
    assert all(r["p99_ratio"] > 0 for r in result["ratios"])
