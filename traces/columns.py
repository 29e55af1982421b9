"""Checks shared by the trace readers on converted columns: finite, in range, integral.

Each takes a numpy array and reports the first bad row with its value, so every reader
refuses bad data the same way (and a NaN never slips through as a number).
"""

from pathlib import Path

import numpy as np
import pyarrow as pa

from thaw_kernel import bounds
from traces.errors import TraceError, where


def first_bad(bad: np.ndarray, values: np.ndarray, column: str, path: Path, want: str) -> None:
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        value = values[row].item()
        exact = isinstance(value, float) and value.is_integer() and abs(value) < 2**53
        shown = int(value) if exact else value
        raise TraceError(f"{path}: {where(path, row)}: {column} must be {want}, got {shown!r}")


def _floats(column: pa.ChunkedArray | pa.Array, name: str, path: Path) -> np.ndarray:
    if column.null_count:
        row = int(np.flatnonzero(column.is_null().to_numpy(zero_copy_only=False))[0])
        raise TraceError(f"{path}: {where(path, row)}: {name} is empty")
    return column.to_numpy().astype(np.float64, copy=False)


def numbers(
    column: pa.ChunkedArray,
    name: str,
    path: Path,
    *,
    minimum: float,
    maximum: float = bounds.SECONDS,
) -> np.ndarray:
    """Finite float64 values from minimum to maximum (by default, times in seconds: see
    `thaw_kernel.bounds`)."""
    values = _floats(column, name, path)
    bad = ~np.isfinite(values) | ~(values >= minimum) | ~(values <= maximum)
    first_bad(bad, values, name, path, f"a number >= {minimum:g} and <= {maximum:g}")
    return values


def integers(
    column: pa.ChunkedArray, name: str, path: Path, *, minimum: int, maximum: int = bounds.COUNT
) -> np.ndarray:
    """Whole numbers from minimum to maximum as int64 (token counts: 1; invocation counts:
    0). An integer column is checked as it is (unsigned ones too, before any conversion
    could wrap them); a float one (lenient formats accept `12.0`) must be whole."""
    want = f"an integer >= {minimum} and <= {maximum}"
    if pa.types.is_integer(column.type) and not column.null_count:
        values = column.to_numpy()
        first_bad((values < minimum) | (values > maximum), values, name, path, want)
        return values.astype(np.int64, copy=False)
    values = _floats(column, name, path)
    bad = ~np.isfinite(values) | ~(values >= minimum) | ~(values <= maximum)
    first_bad(bad | (values != np.floor(values)), values, name, path, want)
    return values.astype(np.int64)


def counts(column: pa.ChunkedArray, name: str, path: Path) -> np.ndarray:
    """Token counts: integers from 1 to `bounds.TOKENS`."""
    return integers(column, name, path, minimum=1, maximum=bounds.TOKENS)
