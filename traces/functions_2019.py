"""Azure Functions 2019 invocation counts (Shahrad et al., "Serverless in the Wild", USENIX
ATC 2020): `HashOwner,HashApp,HashFunction,Trigger,<minute>...`, one row per function,
each minute column the number of invocations in that minute.

Minute columns are matched by name, never by position: official day files have `1..1440`,
the bundled sample `480..959`. Minute m covers [(m - m0) * 60, (m - m0 + 1) * 60) seconds,
m0 being the first minute column, so the trace starts at 0. Each invocation becomes a
request of its function (`traces.mapping` gives it a model); where in its minute it falls
is the placement (`traces.placement`). Only minutes that meet the time window are
expanded, and `scale` multiplies every count (randomised rounding keeps the expected
count), so a day file never has to become a billion requests.

The optional durations and memory files are matched to functions by column name; the
official memory file is per app (`HashOwner,HashApp,...`), the sample's per function.
They are checked and summarised (`stats`); the canonical trace has no field for them.
"""

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from thaw_kernel import bounds
from traces.columns import numbers
from traces.csv_file import Column, check_text, header, read_columns
from traces.errors import TraceError, line_of
from traces.mapping import FUNCTION_APPS
from traces.options import Options
from traces.placement import MINUTE_S, place

KEYS = ["HashOwner", "HashApp", "HashFunction", "Trigger"]
_COUNT = "an invocation count (an integer >= 0)"


def _minute_columns(names: list[str]) -> list[str]:
    return sorted((n for n in names if n.isdigit()), key=int)


def _minutes(path: Path, options: Options) -> tuple[list[str], np.ndarray]:
    """The minute columns that meet the window, and their start times in seconds."""
    names = _minute_columns(header(path))
    if not names:
        raise TraceError(f"{path}: line 1: no minute columns (named 1..1440) in the header")
    starts = (np.array([int(n) for n in names]) - int(names[0])) * MINUTE_S
    keep = np.ones(len(names), dtype=bool)
    if options.window is not None:
        keep = (starts + MINUTE_S > options.window[0]) & (starts < options.window[1])
    return [n for n, k in zip(names, keep, strict=True) if k], starts[keep]


def _counts(table: pa.Table, names: list[str], path: Path) -> np.ndarray:
    """The (function, minute) count matrix; int32 halves a day file's 66M cells."""
    counts = np.empty((table.num_rows, len(names)), dtype=np.int32)
    for j, name in enumerate(names):
        counts[:, j] = table[name].to_numpy()
    negative = counts < 0
    if negative.any():
        row, col = (int(i[0]) for i in np.nonzero(negative))
        raise TraceError(
            f"{path}: line {line_of(row)}: minute {names[col]} must be {_COUNT}, "
            f"got {counts[row, col]}"
        )
    return counts


def _scaled(counts: np.ndarray, scale: float, rng: np.random.Generator) -> np.ndarray:
    """counts x scale, rounded up or down at random so the expectation is exact."""
    if scale == 1:
        return counts
    exact = counts * scale
    whole = np.floor(exact)
    return (whole + (rng.random(counts.shape) < exact - whole)).astype(np.int64)


def read_functions_2019(path: Path, options: Options, rng: np.random.Generator) -> pd.DataFrame:
    """One row per invocation: `arrival_s` and `function` (row number in the file)."""
    check_text(path)
    names, starts = _minutes(path, options)
    keys = [Column(k, pa.string(), "text") for k in KEYS[:3]]
    table = read_columns(path, keys + [Column(n, pa.int32(), _COUNT) for n in names])
    raw = _counts(table, names, path)
    expected = float(raw.sum(dtype=np.float64)) * options.scale
    if expected > bounds.REQUESTS:
        raise TraceError(
            f"{path}: {expected:g} invocations (after --scale); at most {bounds.REQUESTS} "
            "requests (thaw_kernel/bounds.py)"
        )
    function, arrival = place(
        _scaled(raw, options.scale, rng), starts, options.placement, options.cv, rng
    )
    frame = pd.DataFrame({"arrival_s": arrival, "function": function}, copy=False)
    functions = pd.DataFrame({k: table[k].to_numpy(zero_copy_only=False) for k in KEYS[:3]})
    functions["invocations"] = raw.sum(axis=1, dtype=np.int64)
    frame.attrs["functions"] = len(functions)
    apps = functions.groupby(["HashOwner", "HashApp"], sort=False).ngroup()
    frame.attrs[FUNCTION_APPS] = apps.to_numpy(dtype=np.int64)
    if options.durations is not None:
        frame.attrs.update(_durations(options.durations, functions))
    if options.memory is not None:
        frame.attrs.update(_memory(options.memory, functions))
    return frame


def _weighted(
    functions: pd.DataFrame,
    table: pd.DataFrame,
    key: list[str],
    value: str,
) -> tuple[int, float | None]:
    """How many of the trace's functions `table` covers, and `value` averaged over their
    invocations (the first row of a repeated key counts)."""
    joined = functions.merge(table.drop_duplicates(key)[[*key, value]], on=key, how="inner")
    weight = joined["invocations"].to_numpy(dtype=np.float64)
    total = weight.sum()
    mean = float((weight * joined[value].to_numpy()).sum() / total) if total else None
    return len(joined), mean


def _companion(path: Path, key: list[str], value: str, want: str) -> pd.DataFrame:
    table = read_columns(
        path, [*(Column(k, pa.string(), "text") for k in key), Column(value, pa.float64(), want)]
    )
    frame = pd.DataFrame({k: table[k].to_numpy(zero_copy_only=False) for k in key})
    frame[value] = numbers(table[value], value, path, minimum=0.0, maximum=bounds.COUNT)
    return frame


def _durations(path: Path, functions: pd.DataFrame) -> dict:
    """The `function_durations_percentiles` file: `Average` is in milliseconds."""
    key = KEYS[:3]
    covered, mean = _weighted(
        functions, _companion(path, key, "Average", "a number >= 0"), key, "Average"
    )
    return {"functions_with_durations": covered, "mean_duration_ms": mean}


def _memory(path: Path, functions: pd.DataFrame) -> dict:
    """The memory file: per app officially (no `HashFunction`), per function in the
    sample's layout; `AverageAllocatedMb` either way."""
    check_text(path)
    key = KEYS[:3] if "HashFunction" in header(path) else KEYS[:2]
    table = _companion(path, key, "AverageAllocatedMb", "a number >= 0")
    covered, mean = _weighted(functions, table, key, "AverageAllocatedMb")
    return {"functions_with_memory": covered, "mean_memory_mb": mean}
