"""The canonical trace (docs/design.md): `arrival_s, model, input_tokens, output_tokens`.

Optional columns `request_id` and `slo_ttft_s` are kept. CSV or Parquet. Models become a
categorical column (one string per distinct model, not per row). Rows stay in file order
here; `traces.read` sorts them by arrival.
"""

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from thaw_kernel import bounds
from traces.columns import counts, numbers
from traces.csv_file import Column, read_columns, require_columns
from traces.errors import TraceError, is_parquet, shown, where
from traces.labels import categorical

REQUIRED = ["arrival_s", "model", "input_tokens", "output_tokens"]
OPTIONAL = ["request_id", "slo_ttft_s"]
_MODEL = pa.dictionary(pa.int32(), pa.string())
_COLUMNS = [
    Column("arrival_s", pa.float64(), "a number >= 0"),
    Column("model", _MODEL, "a model name"),
    Column("input_tokens", pa.float64(), "an integer >= 1"),
    Column("output_tokens", pa.float64(), "an integer >= 1"),
]
_OPTIONAL = [
    Column("request_id", pa.string(), "text"),
    Column("slo_ttft_s", pa.float64(), "a number >= 0"),
]


def _read_parquet(path: Path) -> pa.Table:
    try:
        names = pq.read_schema(path).names
    except Exception as err:  # pyarrow raises several unrelated types for a bad file
        raise TraceError(
            f"{path}: not a readable Parquet file: {' '.join(str(err).split())}"
        ) from None
    twice = next((name for i, name in enumerate(names) if name in names[:i]), None)
    if twice is not None:  # which of the two would count?
        raise TraceError(f"{path}: column {shown(twice)} appears twice")
    try:
        table = pq.read_table(path)
    except Exception as err:  # pyarrow raises several unrelated types for a bad file
        raise TraceError(
            f"{path}: not a readable Parquet file: {' '.join(str(err).split())}"
        ) from None
    require_columns(table.column_names, REQUIRED, path)
    if table.num_rows == 0:
        raise TraceError(f"{path}: no rows")
    for name in ("arrival_s", "input_tokens", "output_tokens", "slo_ttft_s"):
        if (
            name in table.column_names
            and not pa.types.is_floating(table[name].type)
            and not pa.types.is_integer(table[name].type)
        ):
            raise TraceError(f"{path}: column {name} must be numeric, is {table[name].type}")
    return table


def _models(column: pa.ChunkedArray, path: Path) -> pd.Categorical:
    """Model names, stripped, as a categorical built from the dictionary: vectorised."""
    if not pa.types.is_dictionary(column.type):
        try:
            column = column.cast(pa.string()).dictionary_encode()
        except pa.ArrowInvalid:  # bytes that are not UTF-8, in a binary column
            raise TraceError(f"{path}: column model: not UTF-8 text") from None
    encoded = column.unify_dictionaries().combine_chunks()
    names = [str(n).strip() for n in encoded.dictionary.to_pylist()]
    indices = encoded.indices.fill_null(len(names)).to_numpy()  # null: the "" name below
    for code, name in enumerate(names):
        if len(name) > bounds.FIELD_CHARS:
            row = int(np.flatnonzero(indices == code)[0])
            raise TraceError(
                f"{path}: {where(path, row)}: model name {shown(name)} is longer than "
                f"{bounds.FIELD_CHARS} characters (thaw_kernel/bounds.py)"
            )
    model = categorical(indices, [*names, ""])
    empty = np.asarray(model == "")
    if empty.any():
        raise TraceError(f"{path}: {where(path, int(np.flatnonzero(empty)[0]))}: model is empty")
    return model


def read_canonical(path: Path) -> pd.DataFrame:
    table = _read_parquet(path) if is_parquet(path) else read_columns(path, _COLUMNS, _OPTIONAL)
    models = _models(table["model"], path)
    frame = pd.DataFrame(
        {
            "arrival_s": numbers(table["arrival_s"], "arrival_s", path, minimum=0.0),
            "model": models,
            "input_tokens": counts(table["input_tokens"], "input_tokens", path),
            "output_tokens": counts(table["output_tokens"], "output_tokens", path),
        },
        copy=False,
    )
    if "request_id" in table.column_names:
        frame["request_id"] = table["request_id"].cast(pa.string()).to_pandas()
    if "slo_ttft_s" in table.column_names:
        frame["slo_ttft_s"] = numbers(table["slo_ttft_s"], "slo_ttft_s", path, minimum=0.0)
    return frame
