"""`python -m calibration.remote`: run the store in the foreground.

    python -m calibration.remote --root DIR --rate BYTES_PER_S

Serves the files under DIR at `http://127.0.0.1:PORT/s{K}/{path}`, each simulated
server K paced to the rate (a number of bytes/s, or "160MB/s", "1Gb/s"), on a free port.
Prints `port PORT` on stdout once listening, so that a parent can read it, then runs
until interrupted or terminated. Bad arguments are one line on stderr and exit 2.
"""

import argparse
import asyncio
import sys
from pathlib import Path

from calibration.remote.store import serve
from thaw_kernel import bounds
from thaw_kernel.command_line import Parser, run
from thaw_kernel.errors import InputError
from thaw_kernel.units import parse_bandwidth

PROG = "python -m calibration.remote"


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)

    def body() -> None:
        if not args.root.is_dir():
            raise InputError(f"--root {args.root}: no such directory")
        asyncio.run(serve(args.root.resolve(), args.rate, _announce))

    return run(PROG, body)


def _announce(port: int) -> None:
    print(f"port {port}", flush=True)


def rate(text: str) -> float:
    """A rate of bytes/s from `--rate`, within thaw's bounds on a bandwidth."""
    try:
        value = float(text)  # "1e6" too, which parse_bandwidth reads as a unit
    except ValueError:
        value = None
    try:
        value = parse_bandwidth(text) if value is None else value
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    if not bounds.BANDWIDTH_MIN <= value <= bounds.BANDWIDTH_MAX:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a rate from {bounds.BANDWIDTH_MIN:g} to "
            f"{bounds.BANDWIDTH_MAX:g} bytes/s (thaw_kernel/bounds.py)"
        )
    return value


def _parser() -> Parser:
    parser = Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, required=True, help="the directory to serve")
    parser.add_argument(
        "--rate", type=rate, required=True, help="each server's bytes/s, e.g. 160MB/s"
    )
    return parser
