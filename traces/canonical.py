"""The canonical trace (DESIGN.md): `arrival_s, model, input_tokens, output_tokens`.

Optional columns `request_id` and `slo_ttft_s` are kept. CSV or Parquet. Rows stay in file
order here; `traces.load` sorts them by arrival.
"""

from pathlib import Path

import numpy as np
import pandas as pd

from traces.columns import counts, numbers, require_columns
from traces.csv_file import read_text_columns
from traces.errors import TraceError, line_of

REQUIRED = ["arrival_s", "model", "input_tokens", "output_tokens"]
OPTIONAL = ["request_id", "slo_ttft_s"]


def _read_parquet(path: Path) -> pd.DataFrame:
    try:
        frame = pd.read_parquet(path)
    except Exception as err:  # pyarrow raises several unrelated types for a bad file
        raise TraceError(f"{path}: not a readable Parquet file: {err}") from None
    return frame.astype({c: str for c in frame.columns if c in ("model", "request_id")})


def read_canonical(path: Path) -> pd.DataFrame:
    is_parquet = path.suffix.lower() in (".parquet", ".pq")
    raw = _read_parquet(path) if is_parquet else read_text_columns(path)
    require_columns(raw, REQUIRED, path)
    models = raw["model"].astype(str).str.strip()
    empty = (models == "").to_numpy()
    if empty.any():
        row = int(np.flatnonzero(empty)[0])
        raise TraceError(f"{path}: line {line_of(row)}: model is empty")
    frame = pd.DataFrame(
        {
            "arrival_s": numbers(raw, "arrival_s", path, minimum=0.0),
            "model": models.to_numpy(dtype=object),
            "input_tokens": counts(raw, "input_tokens", path),
            "output_tokens": counts(raw, "output_tokens", path),
        }
    )
    if "request_id" in raw:
        frame["request_id"] = raw["request_id"].astype(str).to_numpy(dtype=object)
    if "slo_ttft_s" in raw:
        frame["slo_ttft_s"] = numbers(raw, "slo_ttft_s", path, minimum=0.0)
    return frame
