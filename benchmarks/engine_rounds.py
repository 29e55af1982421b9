"""What the benchmarks that time the `tiers` scenario's own engines in rounds share
(`load_pairs.py`, `download_beside_load.py`): their command line, and a clean exit on
SIGTERM so that their scratch files go with them."""

import argparse
import signal
from pathlib import Path

from calibration.validate.scenario import TIERS_QUICK, Scenario
from thaw_kernel.command_line import Parser
from thaw_kernel.errors import InputError


def command_line(
    prog: str, doc: str, argv: list[str] | None, small: Scenario
) -> tuple[argparse.Namespace, Scenario]:
    """`--dir`, `--rounds`, `--small` and `--json` parsed, and the scenario they ask for
    (`small` with `--small`, else the `tiers` quick one); SIGTERM then exits as Ctrl-C
    does, through every `finally`."""
    parser = Parser(prog=prog, description=doc.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, default=Path("/var/tmp"), help="the SSD files")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of every kind")
    parser.add_argument("--small", action="store_true", help="tiny checkpoints (a test)")
    parser.add_argument("--json", action="store_true", help="one JSON object")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        raise InputError(f"--rounds: expected at least 1, got {args.rounds}")
    signal.signal(signal.SIGTERM, _terminated)
    return args, small if args.small else TIERS_QUICK


def _terminated(*_: object) -> None:
    raise SystemExit(143)
