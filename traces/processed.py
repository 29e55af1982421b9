"""The processed CSV that LLM-serving simulators commonly ship (Vidur's layout):
`arrived_at,num_prefill_tokens,num_decode_tokens`, arrivals already in seconds.

Arrivals are kept as written (seconds since the trace's start, so they must be >= 0); the
file names no model.
"""

from pathlib import Path

import pandas as pd
import pyarrow as pa

from traces.columns import counts, numbers
from traces.csv_file import Column, read_columns

COLUMNS = ["arrived_at", "num_prefill_tokens", "num_decode_tokens"]


def read_processed(path: Path) -> pd.DataFrame:
    table = read_columns(
        path,
        [
            Column("arrived_at", pa.float64(), "a number >= 0"),
            Column("num_prefill_tokens", pa.float64(), "an integer >= 1"),
            Column("num_decode_tokens", pa.float64(), "an integer >= 1"),
        ],
    )
    return pd.DataFrame(
        {
            "arrival_s": numbers(table["arrived_at"], "arrived_at", path, minimum=0.0),
            "input_tokens": counts(table["num_prefill_tokens"], "num_prefill_tokens", path),
            "output_tokens": counts(table["num_decode_tokens"], "num_decode_tokens", path),
        },
        copy=False,
    )
