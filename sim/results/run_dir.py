"""Write a run directory atomically: built under a temporary name, then renamed into place.

A run that fails or is killed leaves no half-written directory behind. An existing
directory is replaced only if it is empty or a run directory thaw wrote, unchanged
(`thaw_kernel.publish`); anything else at that path belongs to the user and is never
touched.
"""

import json
import math
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

from sim.schema import INSTANCES, REQUESTS
from thaw_kernel.errors import InputError
from thaw_kernel.publish import check_replaceable, staged_directory

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
    text = _summary_json(summary)
    with staged_directory(out, KIND) as staging:
        requests.to_parquet(staging / REQUESTS, index=False)
        instances.to_parquet(staging / INSTANCES, index=False)
        (staging / "config.toml").write_text(config_toml, encoding="utf-8")
        (staging / "summary.json").write_text(text, encoding="utf-8")


def _summary_json(summary: dict) -> str:
    """summary.json's text, before anything is written: a figure that overflowed to inf
    or NaN comes from inputs beyond what the clock holds, and is refused naming it."""
    try:
        return json.dumps(summary, indent=2, allow_nan=False) + "\n"
    except ValueError:
        key = next(_non_finite(summary), "?")
        raise InputError(
            f"summary.json: {key} is not a finite number: the inputs' times, sizes or rates "
            "overflow the simulated clock; nothing was written"
        ) from None


def _non_finite(value: object, path: str = "") -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _non_finite(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from _non_finite(item, f"{path}[{i}]")
    elif isinstance(value, float) and not math.isfinite(value):
        yield path
