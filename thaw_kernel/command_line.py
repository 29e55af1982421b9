"""The command line every thaw command shares: usage errors and bad input are one line
on stderr and exit status 2, and Ctrl-C is one line and exit status 130, never a
traceback."""

import argparse
import re
import sys
from collections.abc import Callable

from thaw_kernel.errors import InputError

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def one_line(message: str) -> str:
    """`message` with control characters (a newline in a model name, an escape sequence
    in a file name) written as escapes, so an error stays one line and prints as itself."""
    return _CONTROL.sub(lambda match: repr(match.group())[1:-1], message)


class Parser(argparse.ArgumentParser):
    """argparse, but usage errors are one line (and still exit 2)."""

    def error(self, message: str) -> None:
        self.exit(2, f"{self.prog}: error: {one_line(message)}\n")


def run(prog: str, body: Callable[[], int | None]) -> int:
    """Run `body` and return its exit status (0 for None); bad input (`InputError`) and
    a file that cannot be read or written are one line naming it, and exit 2; Ctrl-C
    (whatever it interrupted has already cleaned up on its way out) is exit 130."""
    try:
        return body() or 0
    except InputError as err:
        print(f"{prog}: error: {one_line(str(err))}", file=sys.stderr)
        return 2
    except OSError as err:
        where = f"{err.filename}: " if err.filename else ""
        print(f"{prog}: error: {one_line(f'{where}{err.strerror or err}')}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
