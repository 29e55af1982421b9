"""Write a run directory atomically: built under a temporary name, then renamed into place.

A run that fails or is killed leaves no half-written directory behind. An existing
directory is replaced only if it is empty or a run directory thaw wrote, unchanged
(`sim.common.publish`); anything else at that path belongs to the user and is never
touched.
"""

import json
from pathlib import Path

import pandas as pd

from sim.common.publish import check_replaceable, staged_directory
from sim.results.schema import INSTANCES, REQUESTS

KIND = "run"


def check_writable(out: Path) -> None:
    """Refuse, before any work, an output path that holds something not ours."""
    check_replaceable(out, KIND, "--out")


def write_run(
    out: Path,
    requests: pd.DataFrame,
    instances: pd.DataFrame,
    summary: dict,
    config_toml: str,
) -> None:
    check_writable(out)
    with staged_directory(out, KIND) as staging:
        requests.to_parquet(staging / REQUESTS, index=False)
        instances.to_parquet(staging / INSTANCES, index=False)
        (staging / "config.toml").write_text(config_toml, encoding="utf-8")
        (staging / "summary.json").write_text(
            json.dumps(summary, indent=2, allow_nan=False) + "\n", encoding="utf-8"
        )
