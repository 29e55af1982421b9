"""Read a CSV trace as text columns, turning parser failures into one-line errors.

Every field is read as a string and converted by the format's reader, so a bad value is
reported with its line instead of silently becoming NaN. Blank lines are kept (as empty
rows) so that row numbers map to file lines.
"""

from pathlib import Path

import pandas as pd

from traces.errors import TraceError


def read_text_columns(path: Path) -> pd.DataFrame:
    try:
        return pd.read_csv(
            path, dtype=str, keep_default_na=False, skip_blank_lines=False, encoding="utf-8"
        )
    except pd.errors.EmptyDataError:
        raise TraceError(f"{path}: line 1: the file is empty") from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as err:
        message = " ".join(str(err).split())
        raise TraceError(f"{path}: {message}") from None


def header(path: Path) -> list[str]:
    """The column names on the first line (for format detection)."""
    with path.open("r", encoding="utf-8", errors="replace", newline="") as handle:
        first = handle.readline()
    return [name.strip() for name in first.strip().split(",")]
