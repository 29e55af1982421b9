"""The Azure LLM inference trace, 2023 release: `TIMESTAMP,ContextTokens,GeneratedTokens`.

One row per request; timestamps are naive with 7 fractional digits, lines end in CRLF and
the last has no newline (see traces/data/ATTRIBUTION.md). Arrivals are seconds since the
first request. The trace names no model: the caller assigns them (`traces.popularity`).
"""

from pathlib import Path

import numpy as np
import pandas as pd

from traces.columns import counts, require_columns
from traces.csv_file import read_text_columns
from traces.errors import TraceError, line_of

COLUMNS = ["TIMESTAMP", "ContextTokens", "GeneratedTokens"]


def read_azure_llm_2023(path: Path) -> pd.DataFrame:
    """The requests in file order, without a model column."""
    raw = read_text_columns(path)
    require_columns(raw, COLUMNS, path)
    stamps = pd.to_datetime(raw["TIMESTAMP"], format="ISO8601", errors="coerce", utc=True)
    bad = stamps.isna().to_numpy()
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise TraceError(
            f"{path}: line {line_of(row)}: TIMESTAMP is not a date and time: "
            f"{raw['TIMESTAMP'].iloc[row]!r}"
        )
    seconds = (stamps - stamps.min()).dt.total_seconds().to_numpy(dtype=np.float64)
    frame = pd.DataFrame(
        {
            "arrival_s": seconds,
            "input_tokens": counts(raw, "ContextTokens", path),
            "output_tokens": counts(raw, "GeneratedTokens", path),
        }
    )
    return frame
