"""Date-time columns: the Azure traces stamp requests with ISO 8601 text.

2023 stamps are naive with 7 fractional digits; 2024 ones end in `+00:00` and sometimes
have no fraction; 2025 ones end in `Z`. Arrow parses all of these natively (nanoseconds,
no Python object per row) once told whether a zone is present, which the first data row
decides; a row of the other kind is then an error on its line.
"""

import csv
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from traces.csv_file import header, open_text

_ZONE = re.compile(r"(Z|[+-]\d\d:?\d\d)$")
NAIVE = pa.timestamp("ns")
ZONED = pa.timestamp("ns", tz="UTC")
WANT = "an ISO 8601 date and time"


def first_value(path: Path, column: str) -> str:
    """`column`'s text on the first data row ('' when there is none)."""
    with open_text(path) as handle:
        handle.readline()
        row = next(csv.reader([handle.readline().strip()]), [])
    index = header(path).index(column)
    return row[index].strip() if index < len(row) else ""


def has_zone(text: str) -> bool:
    return bool(_ZONE.search(text))


def stamp_type(path: Path, column: str) -> pa.DataType:
    return ZONED if has_zone(first_value(path, column)) else NAIVE


def seconds_since_first(column: pa.ChunkedArray) -> np.ndarray:
    """Seconds after the earliest stamp, as float64 (exact to the microsecond for a week).
    Differences are taken in integer nanoseconds, chunk by chunk into the output, so no
    whole-column temporary is made."""
    ns = column.cast(pa.int64())
    first = pc.min(ns).as_py()
    seconds = np.empty(len(ns), dtype=np.float64)
    start = 0
    for chunk in ns.chunks:
        part = seconds[start : start + len(chunk)]
        np.subtract(chunk.to_numpy(), first, out=part, casting="unsafe")
        start += len(chunk)
    seconds /= 1e9
    return seconds
