"""Read a CSV trace with pyarrow: typed columns in one vectorised pass, no Python object
per row. Only when that pass fails does a second look find the first bad line (it reads the
file again as text and bisects each column's conversion), so the happy path pays nothing
for precise errors.

Line numbers assume one line per record (no quoted newlines), true of every trace format
thaw reads.
"""

import csv
import gzip
import io
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from thaw_kernel import bounds
from thaw_kernel.user_files import check_regular_file
from traces.errors import TraceError, line_of, shown

SNIFF_BYTES = 1 << 16


@dataclass(frozen=True)
class Column:
    """A column to read: its Arrow type and, for error messages, what its values must be."""

    name: str
    type: pa.DataType
    want: str


def is_gzip(path: Path) -> bool:
    return path.suffix.lower() == ".gz"


def open_bytes(path: Path) -> BinaryIO:
    """The file's bytes, decompressed when it is gzip-compressed (`.csv.gz`, as traces are
    often published); pyarrow decompresses such a path by itself."""
    return gzip.open(path, "rb") if is_gzip(path) else path.open("rb")


def open_text(path: Path) -> io.TextIOWrapper:
    """The file as UTF-8 text, without the byte-order mark spreadsheets write."""
    return io.TextIOWrapper(open_bytes(path), encoding="utf-8-sig", errors="replace", newline="")


def check_text(path: Path) -> None:
    """Refuse a missing, empty or binary file (or a directory, a FIFO, a device, or a
    `.gz` that is not gzip) before any parser sees it."""
    check_regular_file(path, TraceError)
    try:
        with open_bytes(path) as handle:
            start = handle.read(SNIFF_BYTES)
    except (gzip.BadGzipFile, EOFError) as err:
        raise TraceError(f"{path}: not a gzip file ({err})") from None
    if not start.strip():
        raise TraceError(f"{path}: line 1: the file is empty")
    if b"\x00" in start:
        raise TraceError(f"{path}: not a text CSV file (binary data near the start)")
    try:
        start.decode("utf-8", errors="strict")
    except UnicodeDecodeError as err:
        # A cut in the middle of a multi-byte character at the sniff boundary is not garbage.
        if err.reason != "unexpected end of data":
            line = start[: err.start].count(b"\n") + 1
            raise TraceError(f"{path}: line {line}: not UTF-8 text") from None


def header(path: Path) -> list[str]:
    """The column names on the first line, stripped of spaces and of the byte-order mark
    spreadsheets write; a name given twice is refused (which of the two would count?)."""
    with open_text(path) as handle:
        first = handle.readline(bounds.FIELD_CHARS * 1024)
    try:
        names = [name.strip() for name in next(csv.reader([first.strip()]), [])]
    except csv.Error:  # a field beyond the csv module's limit (128 Ki characters)
        names = [first]
    seen: set[str] = set()
    for name in names:
        if len(name) > bounds.FIELD_CHARS:
            raise TraceError(
                f"{path}: line 1: a column name is longer than {bounds.FIELD_CHARS} characters "
                "(thaw_kernel/bounds.py)"
            )
        if name in seen:
            raise TraceError(f"{path}: line 1: column {shown(name)} appears twice")
        seen.add(name)
    return names


def require_columns(present: list[str], wanted: list[str], path: Path) -> None:
    missing = [c for c in wanted if c not in present]
    if missing:
        raise TraceError(
            f"{path}: line 1: missing column(s) {', '.join(missing)} "
            f"(header has {', '.join(map(str, present))})"
        )


def _read(path: Path, types: dict[str, pa.DataType]) -> pa.Table:
    """The columns `types` names, by the stripped names of `header` (so a byte-order mark
    or a space after a name in the file does not hide a column)."""
    return pacsv.open_csv(
        path,
        read_options=pacsv.ReadOptions(block_size=1 << 22, column_names=header(path), skip_rows=1),
        parse_options=pacsv.ParseOptions(ignore_empty_lines=False),
        convert_options=pacsv.ConvertOptions(
            column_types=types,
            include_columns=list(types),
            null_values=[],
            strings_can_be_null=False,
        ),
    ).read_all()


def read_columns(path: Path, columns: list[Column], optional: list[Column] = ()) -> pa.Table:
    """The named columns, converted; `optional` ones only where the header has them."""
    check_text(path)
    names = header(path)
    require_columns(names, [c.name for c in columns], path)
    wanted = [*columns, *(c for c in optional if c.name in names)]
    try:
        table = _read(path, {c.name: c.type for c in wanted})
    except (pa.ArrowInvalid, pa.ArrowKeyError) as err:
        raise _locate(path, wanted, err) from None
    if table.num_rows == 0:
        raise TraceError(f"{path}: line 2: no rows after the header")
    return table


def _first_failure(strings: pa.Array, type_: pa.DataType) -> int | None:
    """The first row whose text does not convert to `type_` (bisecting casts: O(n) work)."""

    def fails(lo: int, hi: int) -> bool:
        try:
            pc.cast(pc.utf8_trim_whitespace(strings.slice(lo, hi - lo)), type_)
        except pa.ArrowInvalid:
            return True
        return False

    lo, hi = 0, len(strings)
    if not fails(lo, hi):
        return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fails(lo, mid):
            hi = mid
        else:
            lo = mid
    return lo


def _locate(path: Path, columns: list[Column], err: Exception) -> TraceError:
    """Why the typed read failed, at the first bad line (the error path only)."""
    try:
        text = _read(path, {c.name: pa.string() for c in columns})
    except (pa.ArrowInvalid, pa.ArrowKeyError):
        return TraceError(f"{path}: {_ragged_line(path)}")
    blank = np.ones(text.num_rows, dtype=bool)
    for column in columns:
        blank &= pc.equal(text[column.name], "").to_numpy(zero_copy_only=False)
    if blank.any():
        return TraceError(f"{path}: line {line_of(int(np.flatnonzero(blank)[0]))}: blank line")
    for column in columns:
        if column.type == pa.string():
            continue
        strings = text[column.name].combine_chunks()
        row = _first_failure(strings, column.type)
        if row is not None:
            return TraceError(
                f"{path}: line {line_of(row)}: {column.name} must be {column.want}, "
                f"got {shown(strings[row].as_py())}"
            )
    return TraceError(f"{path}: {' '.join(str(err).split())}")


def _ragged_line(path: Path) -> str:
    """The first line that is not UTF-8, is blank, or has a different number of fields than
    the header (the error path only: a Python loop over lines)."""
    with open_bytes(path) as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                return f"line {number}: not UTF-8 text"
            try:
                fields = next(csv.reader([line.rstrip("\r\n")]), [])
            except csv.Error:  # a field beyond the csv module's limit (128 Ki characters)
                return f"line {number}: a field longer than {bounds.FIELD_CHARS} characters"
            if number == 1:
                width = len(fields)
            elif not fields:
                return f"line {number}: blank line"
            elif len(fields) != width:
                return f"line {number}: expected {width} fields, saw {len(fields)}"
    return "rows and header disagree on the number of fields"
