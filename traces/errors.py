"""The error for a malformed trace: the message names the file, the line and the problem."""

from pathlib import Path

from thaw_kernel.errors import InputError


class TraceError(InputError, ValueError):
    """A trace file or trace option is wrong; the message names the file and line. Also a
    ValueError, so that argparse reports one raised by an option's parser as a usage error."""


def line_of(row: int) -> int:
    """The file line of data row `row` (0-based) in a CSV file with a one-line header."""
    return row + 2


def is_parquet(path: Path) -> bool:
    return path.suffix.lower() in (".parquet", ".pq")


def where(path: Path, row: int) -> str:
    """How a message points at data row `row`: a line in a CSV file, a row in Parquet."""
    return f"row {row}" if is_parquet(path) else f"line {line_of(row)}"


def shown(value: object, limit: int = 80) -> str:
    """`value` as a message shows it: its repr, cut to `limit` characters (a field of
    megabytes is not quoted whole)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 5]}...{text[-1]} (cut)"
