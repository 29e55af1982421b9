"""Write a canonical trace as CSV or Parquet, atomically: a temporary file in the target's
folder, renamed into place, so a failure never leaves a half-written trace. `.csv.gz`
is written gzip-compressed."""

import gzip
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from thaw_kernel.publish import write_file_atomically
from traces.canonical import OPTIONAL, REQUIRED
from traces.csv_file import is_gzip
from traces.errors import TraceError, is_parquet


def _table(frame: pd.DataFrame) -> pa.Table:
    columns = [c for c in (*REQUIRED, *OPTIONAL) if c in frame]
    table = pa.Table.from_pandas(frame[columns], preserve_index=False)
    return table.set_column(1, "model", table["model"].cast(pa.string()))


def write_canonical(frame: pd.DataFrame, out: Path) -> None:
    if not out.name.lower().endswith((".csv", ".csv.gz", ".parquet")):
        raise TraceError(f"{out}: the output must end in .csv, .csv.gz or .parquet")
    if not out.parent.is_dir():
        raise TraceError(f"{out.parent}: no such folder")
    if out.is_dir():
        raise TraceError(f"{out}: is a directory; give the trace file to write")
    table = _table(frame)

    def write(staging: Path) -> None:
        if is_parquet(out):
            pq.write_table(table, staging)
            return
        opener = gzip.open if is_gzip(out) else open
        with opener(staging, "wb") as handle:  # Arrow would quote the header's names
            handle.write((",".join(table.column_names) + "\n").encode())
            options = pacsv.WriteOptions(include_header=False, quoting_style="needed")
            pacsv.write_csv(table, handle, options)

    write_file_atomically(out, write)
