"""The command line every thaw command shares: usage errors and bad input are one line
on stderr and exit status 2, never a traceback."""

import argparse
import sys
from collections.abc import Callable

from sim.common.errors import InputError


class Parser(argparse.ArgumentParser):
    """argparse, but usage errors are one line (and still exit 2)."""

    def error(self, message: str) -> None:
        self.exit(2, f"{self.prog}: error: {message}\n")


def run(prog: str, body: Callable[[], int | None]) -> int:
    """Run `body` and return its exit status (0 for None); bad input (`InputError`) and
    a file that cannot be read or written are one line naming it, and exit 2."""
    try:
        return body() or 0
    except InputError as err:
        print(f"{prog}: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        where = f"{err.filename}: " if err.filename else ""
        print(f"{prog}: error: {where}{err.strerror or err}", file=sys.stderr)
        return 2
