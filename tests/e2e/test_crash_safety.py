"""A run killed with SIGKILL at any moment leaves a complete run directory or none.

The run directory is built under a hidden temporary name and renamed into place, so a
kill can leave at most a hidden staging directory, never a visible partial run.
"""

import json
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd


def assert_complete_or_absent(out):
    if not out.exists():
        return
    assert sorted(p.name for p in out.iterdir()) == [
        ".thaw-output",
        "config.toml",
        "instances.parquet",
        "requests.parquet",
        "summary.json",
    ]
    summary = json.loads((out / "summary.json").read_text())
    assert len(pd.read_parquet(out / "requests.parquet")) == summary["requests"]


def test_a_run_killed_at_random_moments_leaves_only_complete_results(tmp_path):
    rng = np.random.default_rng(7)
    out = tmp_path / "runs" / "killed"
    out.parent.mkdir()
    for delay in rng.uniform(0.3, 1.5, size=3):
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "sim",
                "run",
                "--quiet",
                "--max-requests",
                "3000",
                "--out",
                str(out),
            ],
            stderr=subprocess.DEVNULL,
        )
        time.sleep(delay)
        process.send_signal(signal.SIGKILL)
        process.wait()
        assert_complete_or_absent(out)
        visible = [p.name for p in out.parent.iterdir() if not p.name.startswith(".")]
        assert visible in ([], ["killed"])
    # And the next run, unkilled, completes over whatever the kills left.
    subprocess.run([sys.executable, "-m", "sim", "run", "--quiet", "--out", str(out)], check=True)
    assert out.exists()
    assert_complete_or_absent(out)
