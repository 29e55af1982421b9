"""What the calibration commands share: one-line usage errors, and bad input as exit 2."""

import argparse
import sys
from collections.abc import Callable

from calibration.format import CheckpointError


class Parser(argparse.ArgumentParser):
    """argparse, but usage errors are one line (and still exit 2)."""

    def error(self, message: str) -> None:
        self.exit(2, f"{self.prog}: error: {message}\n")


def run(prog: str, body: Callable[[], None]) -> int:
    """Run `body`; a bad checkpoint, source or path is one line on stderr and exit 2."""
    try:
        body()
    except CheckpointError as err:
        print(f"{prog}: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        print(f"{prog}: error: {err.filename}: {err.strerror}", file=sys.stderr)
        return 2
    return 0
