"""The error for a malformed trace: the message names the file, the line and the problem."""


class TraceError(ValueError):
    pass


def line_of(row: int) -> int:
    """The file line of data row `row` (0-based) in a CSV file with a one-line header."""
    return row + 2
