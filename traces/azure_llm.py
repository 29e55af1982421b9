"""The Azure LLM inference traces: `TIMESTAMP,ContextTokens,GeneratedTokens`, and the 2025
multimodal one with `NumImages` before the token columns.

One row per request. 2023 (Patel et al., "Splitwise", ISCA 2024): naive timestamps with 7
fractional digits, CRLF, no final newline. 2024 (the week-long files, tens of millions of
rows; Stojkovic et al., "DynamoLLM", HPCA 2025): `+00:00` stamps whose fraction is
sometimes absent. 2025 multimodal ("ModServe", SoCC 2025): stamps ending in `Z`.
Arrivals are seconds after the first request. None names a model: the caller assigns them
(`traces.popularity`).
"""

from pathlib import Path

import pandas as pd
import pyarrow as pa

from traces.columns import counts, integers
from traces.csv_file import Column, read_columns
from traces.timestamps import WANT, seconds_since_first, stamp_type

COLUMNS = ["TIMESTAMP", "ContextTokens", "GeneratedTokens"]
MULTIMODAL_COLUMNS = ["TIMESTAMP", "NumImages", "ContextTokens", "GeneratedTokens"]


def _column(name: str, stamp: pa.DataType) -> Column:
    if name == "TIMESTAMP":
        return Column(name, stamp, WANT)
    return Column(name, pa.int64(), "an integer >= 0" if name == "NumImages" else "an integer >= 1")


def _read(path: Path, names: list[str]) -> pd.DataFrame:
    """Each column is converted, then dropped from the Arrow table, to bound peak memory."""
    table = read_columns(path, [_column(name, stamp_type(path, "TIMESTAMP")) for name in names])
    arrival = seconds_since_first(table["TIMESTAMP"])
    if "NumImages" in names:
        integers(table["NumImages"], "NumImages", path, minimum=0)
    table = table.select(["ContextTokens", "GeneratedTokens"])
    inputs = counts(table["ContextTokens"], "ContextTokens", path)
    table = table.select(["GeneratedTokens"])
    outputs = counts(table["GeneratedTokens"], "GeneratedTokens", path)
    del table
    columns = {"arrival_s": arrival, "input_tokens": inputs, "output_tokens": outputs}
    return pd.DataFrame(columns, copy=False)  # fresh arrays: no consolidating copy


def read_azure_llm(path: Path) -> pd.DataFrame:
    """The requests in file order, without a model column (the 2023 and 2024 layouts)."""
    return _read(path, COLUMNS)


def read_azure_multimodal(path: Path) -> pd.DataFrame:
    """As `read_azure_llm`; `NumImages` is checked (an integer >= 0) but not kept: the
    canonical trace has no image column and the simulator prices prompts by tokens."""
    return _read(path, MULTIMODAL_COLUMNS)
