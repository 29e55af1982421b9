"""`python -m analysis report DIR -o OUT`: the report of a run, a set of runs or a sweep."""

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, never a window; set before pyplot is imported

from analysis.report import check_report_dir, write_report
from analysis.runs import AnalysisInputError, read_runs
from thaw_kernel.command_line import Parser
from thaw_kernel.command_line import run as run_command


def _parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m analysis", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    report = commands.add_parser(
        "report",
        help="figures and a Markdown report for a run, a directory of runs, or a sweep",
        description="Write figures (PNG and SVG) and report.md with tables of TTFT "
        "percentiles and SLO attainment (bootstrap 95% intervals over seeds), cost and loads.",
    )
    report.add_argument(
        "source",
        type=Path,
        metavar="DIR",
        help="a run directory, a sweep directory, or a directory of runs",
    )
    report.add_argument(
        "-o",
        "--out",
        type=Path,
        required=True,
        help="report directory to write (an earlier report there is replaced)",
    )
    report.add_argument(
        "--slo",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="TTFT threshold for SLO attainment (default: 10)",
    )
    return parser


def report(args: argparse.Namespace) -> int:
    if not args.slo > 0:
        raise AnalysisInputError(f"--slo: expected a positive number of seconds, got {args.slo}")
    check_report_dir(args.out)
    runs = read_runs(args.source)
    write_report(runs, args.out, args.slo, args.source)
    runs_count = len(runs.table)
    print(f"report: {args.out / 'report.md'} ({runs_count} run{'s' * (runs_count > 1)})")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    return run_command(f"python -m analysis {args.command}", lambda: report(args))
