"""Read a CSV trace as text columns, turning parser failures into one-line errors.

Every field is read as a string and converted by the format's reader, so a bad value is
reported with its line instead of silently becoming NaN. Blank lines are kept (as empty
rows, then refused) so that row numbers map to file lines.
"""

import csv
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from traces.errors import TraceError, line_of


def _ragged_line(path: Path) -> str:
    """Where a row has a different number of fields than the header (the error path only)."""
    with path.open("r", encoding="utf-8", newline="") as handle:
        rows = csv.reader(handle)
        width = len(next(rows))
        for number, row in enumerate(rows, start=2):
            if row and len(row) != width:
                return f"line {number}: expected {width} fields, saw {len(row)}"
    return "rows and header disagree on the number of fields"


def read_text_columns(path: Path) -> pd.DataFrame:
    try:
        with warnings.catch_warnings():
            # pandas only warns when the first row is longer than the header.
            warnings.simplefilter("error", pd.errors.ParserWarning)
            frame = pd.read_csv(
                path,
                dtype=str,
                keep_default_na=False,
                skip_blank_lines=False,
                index_col=False,
                encoding="utf-8",
            )
    except pd.errors.EmptyDataError:
        raise TraceError(f"{path}: line 1: the file is empty") from None
    except pd.errors.ParserWarning:
        raise TraceError(f"{path}: {_ragged_line(path)}") from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as err:
        message = " ".join(str(err).split())
        raise TraceError(f"{path}: {message}") from None
    blank = (frame == "").all(axis=1).to_numpy()
    if blank.any():
        raise TraceError(f"{path}: line {line_of(int(np.flatnonzero(blank)[0]))}: blank line")
    return frame


def header(path: Path) -> list[str]:
    """The column names on the first line (for format detection)."""
    with path.open("r", encoding="utf-8", errors="replace", newline="") as handle:
        first = handle.readline()
    return [name.strip() for name in first.strip().split(",")]
