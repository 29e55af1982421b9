"""Azure Functions 2021 invocations (Zhang et al., "Faster and Cheaper Serverless Computing
on Harvested Resources", SOSP 2021): `app,func,end_timestamp,duration`, one row per
invocation, times in seconds.

An invocation arrives at end_timestamp - duration; rows are ordered by end, so arrivals
are sorted afterwards. Arrivals are shifted so the first is at 0. A function is an
(app, func) pair, numbered in order of first appearance, for `traces.mapping`.
"""

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from thaw_kernel import bounds
from traces.columns import numbers
from traces.csv_file import Column, read_columns
from traces.mapping import FUNCTION_APPS
from traces.options import Options

COLUMNS = ["app", "func", "end_timestamp", "duration"]
_NAME = pa.dictionary(pa.int32(), pa.string())


def _codes(column: pa.ChunkedArray) -> tuple[np.ndarray, int]:
    encoded = column.unify_dictionaries().combine_chunks()
    return encoded.indices.to_numpy().astype(np.int64), len(encoded.dictionary)


def _first_appearance(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's number, the distinct codes numbered in order of first appearance; and
    the row where each number first appears, in number order."""
    _, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    number = np.empty(len(first), dtype=np.int64)
    number[np.argsort(first, kind="stable")] = np.arange(len(first))
    return number[inverse], np.sort(first)


def read_functions_2021(path: Path, options: Options, rng: np.random.Generator) -> pd.DataFrame:
    """One row per invocation: `arrival_s` and `function`; file order."""
    table = read_columns(
        path,
        [
            Column("app", _NAME, "text"),
            Column("func", _NAME, "text"),
            Column("end_timestamp", pa.float64(), "a number of seconds"),
            Column("duration", pa.float64(), "a number >= 0"),
        ],
    )
    end = numbers(table["end_timestamp"], "end_timestamp", path, minimum=-bounds.SECONDS)
    duration = numbers(table["duration"], "duration", path, minimum=0.0)
    arrival = end - duration
    app, _ = _codes(table["app"])
    func, funcs = _codes(table["func"])
    function, first_rows = _first_appearance(app * funcs + func)
    frame = pd.DataFrame({"arrival_s": arrival - arrival.min(), "function": function})
    frame.attrs["functions"] = len(first_rows)
    # Each function's app, the apps numbered in order of first appearance as functions are.
    frame.attrs[FUNCTION_APPS] = _first_appearance(app[first_rows])[0]
    return frame
