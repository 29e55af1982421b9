"""Write a run directory atomically: built under a temporary name, then renamed into place.

A run that fails or is killed leaves no half-written directory behind. An existing
directory is replaced only if it is itself a thaw run (it has a summary.json); anything
else at that path belongs to the user and is never touched.
"""

import json
import os
import shutil
import tempfile
from pathlib import Path

import pandas as pd

from sim.errors import InputError
from sim.publish import fsync_directory, publish_directory
from sim.results import INSTANCES, REQUESTS


def check_writable(out: Path) -> None:
    """Refuse, before any work, an output path that holds something not ours."""
    if out.exists() and not (out.is_dir() and (out / "summary.json").is_file()):
        raise InputError(f"{out}: exists and is not a thaw run directory; choose another --out")


def write_run(
    out: Path,
    requests: pd.DataFrame,
    instances: pd.DataFrame,
    summary: dict,
    config_toml: str,
) -> None:
    check_writable(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        requests.to_parquet(staging / REQUESTS, index=False)
        instances.to_parquet(staging / INSTANCES, index=False)
        (staging / "config.toml").write_text(config_toml, encoding="utf-8")
        (staging / "summary.json").write_text(
            json.dumps(summary, indent=2, allow_nan=False) + "\n", encoding="utf-8"
        )
        for name in os.listdir(staging):
            with open(staging / name, "rb") as handle:
                os.fsync(handle.fileno())
        fsync_directory(staging)
        publish_directory(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
