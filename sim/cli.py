"""`python -m sim run`: replay a trace on a cluster under a policy and write a run directory."""

import argparse
import sys
from pathlib import Path

import traces
from policies import get_policy, policy_names
from sim.config import load_config
from sim.errors import InputError
from sim.invariants import InvariantError
from sim.progress import ProgressBar
from sim.replay import replay
from sim.run_dir import check_writable, write_run
from sim.summary import summarize
from traces.options import add_trace_options, trace_options


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors are one line (and still exit 2)."""

    def error(self, message: str) -> None:
        self.exit(2, f"{self.prog}: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m sim", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = commands.add_parser(
        "run",
        help="simulate one trace on one cluster under one policy",
        description="Replay a trace on a simulated cluster and report time-to-first-token.",
    )
    run.add_argument(
        "--policy",
        default="locality",
        help=f"placement policy, one of: {', '.join(policy_names())} (default: locality)",
    )
    run.add_argument(
        "--trace",
        type=Path,
        default=None,
        help="trace file in any format `python -m traces` reads, detected from the header "
        "(default: the bundled Azure LLM 2023 code trace)",
    )
    add_trace_options(run, list(traces.FORMATS))
    run.add_argument(
        "--cluster",
        type=Path,
        default=None,
        help="cluster TOML laid over the defaults (default: 4 servers x 4 A40-class GPUs)",
    )
    run.add_argument("--seed", type=int, default=0, help="seed for every random draw (default: 0)")
    run.add_argument(
        "--out",
        type=Path,
        default=None,
        help="run directory to write (default: runs/<policy>-seed<seed>); an existing "
        "thaw run directory there is replaced",
    )
    run.add_argument("--quiet", action="store_true", help="print nothing on success")
    run.add_argument(
        "--profile",
        type=Path,
        default=None,
        help="hardware profile (JSON, from python -m calibration.measure or by hand) whose "
        "numbers replace the cluster's (see sim/profile.py)",
    )
    run.add_argument(
        "--max-requests",
        type=int,
        default=None,
        help="replay only the trace's first N requests",
    )
    run.add_argument(
        "--until",
        type=float,
        default=None,
        help="stop at this simulated time (s); requests unfinished then end as `timeout`",
    )
    run.add_argument(
        "--check",
        action="store_true",
        help="audit the cluster's books after every event (slower; see sim/invariants.py)",
    )
    return parser


def _table(summary: dict) -> str:
    def seconds(key: str) -> str:
        value = summary[key]
        return "n/a" if value is None else f"{value:.3f} s"

    tiers = ", ".join(f"{tier} {n}" for tier, n in summary["loads_by_tier"].items())
    rows = [
        ("policy", summary["policy"]),
        ("requests", f"{summary['requests']} ({summary['completed']} completed)"),
        *(
            [("stopped at", f"{summary['stopped_at_s']:g} s ({summary['timed_out']} timed out)")]
            if summary["stopped_at_s"] is not None
            else []
        ),
        ("TTFT p50", seconds("ttft_p50_s")),
        ("TTFT p90", seconds("ttft_p90_s")),
        ("TTFT p99", seconds("ttft_p99_s")),
        ("loads by tier", tiers),
        ("migrations", str(summary["migrations"])),
        ("preemptions", str(summary["preemptions"])),
        ("GPU-seconds", f"{summary['gpu_seconds']:,.0f}"),
        ("wall time", f"{summary['sim_wall_s']:.2f} s"),
        ("requests / wall s", f"{summary['requests_per_wall_s'] or 0:,.0f}"),
    ]
    if summary["estimates"]:
        rows.insert(8, ("estimate error p50", seconds("estimator_abs_error_p50_s")))
        rows.insert(9, ("estimate error p99", seconds("estimator_abs_error_p99_s")))
    return "\n".join(f"{name:<18} {value}" for name, value in rows)


def run(args: argparse.Namespace) -> int:
    try:
        get_policy(args.policy)
    except KeyError as err:
        raise InputError(str(err.args[0])) from None
    if args.seed < 0:
        raise InputError(f"--seed: expected a non-negative integer, got {args.seed}")
    if args.max_requests is not None and args.max_requests < 1:
        raise InputError(f"--max-requests: expected a positive integer, got {args.max_requests}")
    if args.until is not None and not args.until > 0:
        raise InputError(f"--until: expected a positive number of seconds, got {args.until}")
    out = args.out or Path("runs") / f"{args.policy}-seed{args.seed}"
    check_writable(out)
    config = load_config(args.cluster, args.profile)
    trace_path = args.trace or traces.default_trace()
    show_progress = not args.quiet and sys.stderr.isatty()
    progress = ProgressBar(args.policy) if show_progress else None
    sim = replay(
        config,
        Path(trace_path),
        args.policy,
        args.seed,
        progress,
        trace_options(args),
        check=args.check,
        max_requests=args.max_requests,
        until=args.until,
    )
    summary = summarize(sim, args.policy, args.seed, Path(trace_path))
    write_run(out, sim.table.frame(), summary, config.to_toml())
    if not args.quiet:
        print(_table(summary))
        print(f"{'run directory':<18} {out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return run(args)
    except (InputError, traces.TraceError) as err:
        print(f"python -m sim {args.command}: error: {err}", file=sys.stderr)
        return 2
    except InvariantError as err:
        print(f"python -m sim {args.command}: invariant violated: {err}", file=sys.stderr)
        return 1
