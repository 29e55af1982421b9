"""Checks shared by the trace readers: required columns, integer and numeric fields."""

from pathlib import Path

import numpy as np
import pandas as pd

from traces.errors import TraceError, line_of


def require_columns(frame: pd.DataFrame, columns: list[str], path: Path) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise TraceError(
            f"{path}: line 1: missing column(s) {', '.join(missing)} "
            f"(header has {', '.join(map(str, frame.columns))})"
        )


def _first_bad(bad: np.ndarray, frame: pd.DataFrame, column: str, path: Path, want: str) -> None:
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        value = frame[column].iloc[row]
        raise TraceError(f"{path}: line {line_of(row)}: {column} must be {want}, got {value!r}")


def numbers(frame: pd.DataFrame, column: str, path: Path, *, minimum: float) -> np.ndarray:
    """The column as finite float64 values >= minimum; the first bad one is an error."""
    values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values) | ~(values >= minimum)
    _first_bad(bad, frame, column, path, f"a number >= {minimum:g}")
    return values


def counts(frame: pd.DataFrame, column: str, path: Path) -> np.ndarray:
    """The column as integers >= 1 (token counts); the first bad one is an error."""
    values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values) | (values < 1) | (values != np.floor(values))
    _first_bad(bad, frame, column, path, "an integer >= 1")
    return values.astype(np.int64)
