"""`python -m sim run`: replay a trace on a cluster under a policy and write a run directory.
`python -m sim sweep`: a grid of runs, each in its own run directory, and their table."""

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path

import traces
from policies import get_policy, policy_names
from sim.config import read_config, with_keep_alive, with_queue
from sim.engine.invariants import InvariantError
from sim.keep_alive import keep_alive_names
from sim.queues import queue_names
from sim.results.run_dir import check_writable
from sim.runner.api import run as simulate
from sim.runner.progress import ProgressBar
from sim.runner.sweep.driver import SWEEP_FILE, run_sweep
from sim.runner.sweep.grid import BACKENDS, read_sweep
from sim.schema import SWEEP_TABLE
from thaw_kernel import bounds
from thaw_kernel.command_line import Parser
from thaw_kernel.command_line import run as run_command
from thaw_kernel.errors import InputError
from traces.options import add_trace_options, trace_options


def _parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m sim", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
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
    run.add_argument(
        "--queue",
        default=None,
        help=f"queue discipline, one of: {', '.join(queue_names())} (default: the "
        "cluster's `queue`, fifo unless it says)",
    )
    _keep_alive_option(run)
    add_trace_options(run, list(traces.FORMATS))
    run.add_argument(
        "--cluster",
        type=Path,
        default=None,
        help="cluster TOML laid over the defaults (default: 4 servers x 4 A40-class GPUs)",
    )
    run.add_argument(
        "--models",
        type=int,
        default=None,
        help="replace the catalog by a generated hub of N models, drawn as the cluster's "
        "[catalog] says, if it has one (docs/configuration.md#generated-catalogs)",
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
        "numbers replace the cluster's (see sim/config/profile.py)",
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
        help="audit the cluster's books after every event (slower; see sim/engine/invariants.py)",
    )
    _sweep_parser(commands)
    return parser


def _keep_alive_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--keep-alive",
        default=None,
        metavar="NAME[:PARAMS]",
        help=f"keep-alive policy, one of: {', '.join(keep_alive_names())}; e.g. fixed:300, "
        "histogram:margin=0.2 (default: the cluster's `keep_alive`, fixed at its "
        "keep_alive_s unless it says; see docs/keep-alive.md)",
    )


def _keep_alive_list(text: str) -> list[str]:
    """`--keep-alives`: comma-separated specs, where a piece holding `=` but no `:` is one
    more parameter of the spec before it (`histogram:bin_s=1,min_samples=1,fixed:60` is
    two specs)."""
    specs: list[str] = []
    for piece in text.split(","):
        if specs and "=" in piece and ":" not in piece:
            specs[-1] += "," + piece
        else:
            specs.append(piece)
    return specs


def _comma_list(kind: type) -> Callable[[str], list]:
    def parse(text: str) -> list:
        try:
            return [kind(item) for item in text.split(",")]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a comma-separated list of {kind.__name__}, got {text!r}"
            ) from None

    return parse


def _sweep_parser(commands: argparse._SubParsersAction) -> None:
    sweep = commands.add_parser(
        "sweep",
        help="run a grid of policies x traces x rate scales x clusters x keep-alives x seeds",
        description="Run every point of a grid, each in its own run directory, and write "
        "DIR/sweep.parquet (one row per run). Running the same command again skips the "
        "runs already finished. Options override the sweep file's keys.",
    )
    sweep.add_argument(
        "sweep_file",
        nargs="?",
        type=Path,
        metavar="SWEEP.toml",
        help="sweep file; its keys are the long options' names",
    )
    sweep.add_argument(
        "--policies",
        type=_comma_list(str),
        help="comma-separated policies (default: random,locality,migration,startup-aware)",
    )
    sweep.add_argument("--seeds", type=int, help="seeds 0..N-1 (default: 3)")
    sweep.add_argument(
        "--rate-scales",
        type=_comma_list(float),
        help="arrival-rate multipliers: arrival times are divided by each (default: 1)",
    )
    sweep.add_argument(
        "--traces",
        type=_comma_list(str),
        help="comma-separated trace files; 'default' is the bundled trace (default: default)",
    )
    sweep.add_argument(
        "--clusters",
        type=_comma_list(str),
        help="comma-separated cluster TOML files; 'default' is the default "
        "cluster (default: default)",
    )
    _keep_alive_option(sweep)
    sweep.add_argument(
        "--keep-alives",
        type=_keep_alive_list,
        metavar="SPEC,SPEC,...",
        help="keep-alive policies as an axis of the grid, comma-separated; a piece of the form "
        "key=value continues the parameters of the spec before it: "
        "fixed:60,histogram:bin_s=1,min_samples=1,greedy-dual is three (instead of "
        "--keep-alive; see docs/sweeps.md)",
    )
    sweep.add_argument(
        "--backend", choices=BACKENDS, help="local process pool or Ray (default: local)"
    )
    sweep.add_argument("--jobs", type=int, help="parallel runs (default: one per CPU)")
    sweep.add_argument(
        "--ray-address", help="an existing Ray cluster (default: start a local Ray for the sweep)"
    )
    sweep.add_argument(
        "--out",
        type=Path,
        help="sweep directory (default: sweeps/<SWEEP file name>, or sweeps/sweep)",
    )
    sweep.add_argument("--quiet", action="store_true", help="print nothing on success")


def _table(summary: dict) -> str:
    def seconds(key: str) -> str:
        value = summary[key]
        return "n/a" if value is None else f"{value:.3f} s"

    def figure(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.3f} s"

    def share(key: str) -> str:
        return "n/a" if summary[key] is None else f"{summary[key]:.3f}"

    tiers = ", ".join(f"{tier} {n}" for tier, n in summary["loads_by_tier"].items())
    states = ", ".join(
        f"{state} {seconds:,.0f}" for state, seconds in summary["gpu_seconds_by_state"].items()
    )
    rows = [
        ("policy", summary["policy"]),
        ("queue", summary["queue"]),
        ("requests", f"{summary['requests']} ({summary['completed']} completed)"),
        *([("dropped", str(summary["dropped"]))] if summary["dropped"] else []),
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
        ("keep-alive", summary["keep_alive"]),
        ("pre-warms", f"{summary['prewarms']} ({summary['prewarm_hits']} served a request)"),
        ("GPU-seconds", f"{summary['gpu_seconds']:,.0f}"),
        ("  by state", states),
        ("SLO attainment", share("ttft_slo_attainment")),
        ("cold-start ratio", share("cold_start_ratio")),
        ("fairness (Jain)", share("fairness_jain_slowdown")),
        *(
            (
                f"  {model}",
                f"TTFT p99 {figure(m['ttft_p99_s'])}, queue p99 {figure(m['queue_p99_s'])}",
            )
            for model, m in summary["per_model"].items()
            if m["requests"]
        ),
        ("wall time", f"{summary['sim_wall_s']:.2f} s"),
        ("requests / wall s", f"{summary['requests_per_wall_s'] or 0:,.0f}"),
    ]
    if summary["estimates"]:
        at = [name for name, _ in rows].index("GPU-seconds")
        rows[at:at] = [
            ("estimate error p50", seconds("estimator_abs_error_p50_s")),
            ("estimate error p99", seconds("estimator_abs_error_p99_s")),
        ]
    return "\n".join(f"{name:<18} {value}" for name, value in rows)


def run(args: argparse.Namespace) -> int:
    try:
        get_policy(args.policy)
    except KeyError as err:
        raise InputError(str(err.args[0])) from None
    if args.models is not None and not 1 <= args.models <= bounds.MODELS:
        raise InputError(
            f"--models: expected an integer from 1 to {bounds.MODELS} (thaw_kernel/bounds.py), "
            f"got {args.models}"
        )
    config = read_config(args.cluster, args.profile, models=args.models)
    if args.queue is not None:
        config = with_queue(config, args.queue, "--queue")
    if args.keep_alive is not None:
        config = with_keep_alive(config, args.keep_alive, "--keep-alive")
    if not 0 <= args.seed <= bounds.SEED:
        raise InputError(
            f"--seed: expected an integer from 0 to {bounds.SEED} (thaw_kernel/bounds.py), "
            f"got {args.seed}"
        )
    if args.max_requests is not None and args.max_requests < 1:
        raise InputError(f"--max-requests: expected a positive integer, got {args.max_requests}")
    if args.until is not None and not 0 < args.until < math.inf:
        raise InputError(
            f"--until: expected a positive, finite number of seconds, got {args.until}"
        )
    out = args.out or Path("runs") / f"{args.policy}-seed{args.seed}"
    check_writable(out)
    show_progress = not args.quiet and sys.stderr.isatty()
    result = simulate(
        args.policy,
        args.trace,
        config,
        args.seed,
        trace_options=trace_options(args),
        check=args.check,
        max_requests=args.max_requests,
        until=args.until,
        progress=ProgressBar(args.policy) if show_progress else None,
    )
    result.write(out)
    summary = result.summary
    if not args.quiet:
        print(_table(summary))
        print(f"{'run directory':<18} {out}")
    return 0


def sweep(args: argparse.Namespace) -> int:
    keys = (
        "policies",
        "seeds",
        "rate_scales",
        "traces",
        "clusters",
        "backend",
        "jobs",
        "out",
        "ray_address",
        "keep_alive",
        "keep_alives",
    )
    grid = read_sweep(args.sweep_file, {key: getattr(args, key) for key in keys})
    show_progress = not args.quiet and sys.stderr.isatty()
    progress = ProgressBar("sweep", unit="runs") if show_progress else None
    outcome = run_sweep(grid, progress)
    if not args.quiet:
        table = outcome.table
        by = ["cluster", "trace", "rate_scale", "policy"]
        if len(grid.keep_alives) > 1:
            by.insert(3, "keep_alive")
        p99 = table.groupby(by, sort=False)["ttft_p99_s"]
        print(
            p99.agg(["count", "mean", "min", "max"])
            .rename(columns={"count": "seeds"})
            .to_string(float_format=lambda x: f"{x:.2f}")
        )
        print(
            f"TTFT p99 (s) over seeds above; {outcome.ran} runs done, {outcome.skipped} "
            f"already finished, in {outcome.wall_s:.1f} s"
        )
        print(f"sweep table: {grid.out / SWEEP_TABLE}; grid: {grid.out / SWEEP_FILE}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    prog = f"python -m sim {args.command}"
    try:
        return run_command(prog, lambda: {"run": run, "sweep": sweep}[args.command](args))
    except InvariantError as err:
        print(f"{prog}: invariant violated: {err}", file=sys.stderr)
        return 1
