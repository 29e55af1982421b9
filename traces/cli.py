"""`python -m traces stats|convert|generate`: inspect a trace, convert any format to the
canonical one, or generate a synthetic workload."""

import argparse
import json
import sys
from pathlib import Path

import traces
from thaw_kernel import bounds, seeds
from thaw_kernel.command_line import Parser
from thaw_kernel.command_line import run as run_command
from traces import transform
from traces.catalog import catalog, zipf_exponent
from traces.generate import synthesize
from traces.options import add_trace_options, between, trace_options, up_to
from traces.stats import render, statistics
from traces.writer import write_canonical


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= bounds.REQUESTS:
        raise argparse.ArgumentTypeError(
            f"expected a positive integer up to {bounds.REQUESTS}, got {text!r}"
        )
    return value


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=int, default=0, help="seed for every draw (default: 0)")
    parser.add_argument(
        "--models",
        default=None,
        metavar="A,B,...",
        help="model catalog, most popular first, for traces that name none",
    )
    parser.add_argument(
        "--cluster",
        type=Path,
        default=None,
        help="take the catalog from this cluster TOML's [models] table "
        "(default: the simulator's default catalog)",
    )
    parser.add_argument(
        "--zipf",
        type=between(0, bounds.ZIPF),
        default=None,
        help="Zipf exponent of model popularity (default: the cluster's, else 1)",
    )


def _parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m traces", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    formats = list(traces.FORMATS)

    stats = commands.add_parser("stats", help="describe a trace")
    stats.add_argument("trace", type=Path)
    stats.add_argument("--json", action="store_true", help="print one JSON object")
    _common(stats)
    add_trace_options(stats, formats)

    convert = commands.add_parser("convert", help="write a trace in the canonical form")
    convert.add_argument("trace", type=Path)
    convert.add_argument("-o", "--out", type=Path, required=True, help="OUT.csv or OUT.parquet")
    _common(convert)
    add_trace_options(convert, formats)

    generate = commands.add_parser("generate", help="write a synthetic trace")
    generate.add_argument("-o", "--out", type=Path, required=True, help="OUT.csv or OUT.parquet")
    generate.add_argument(
        "--rate", type=up_to(bounds.REQUESTS), required=True, help="requests per second"
    )
    size = generate.add_mutually_exclusive_group(required=True)
    size.add_argument("--duration", type=up_to(bounds.SECONDS), help="seconds of arrivals")
    size.add_argument("--requests", type=_count, help="number of requests")
    generate.add_argument(
        "--arrivals",
        choices=("poisson", "gamma"),
        default="poisson",
        help="inter-arrival distribution; gamma takes --cv (default: poisson)",
    )
    _common(generate)
    add_trace_options(generate, None)
    return parser


def _read(args: argparse.Namespace) -> traces.Trace:
    rng = seeds.rng(args.seed, "trace")
    models = catalog(args.models, args.cluster)
    zipf = zipf_exponent(args.zipf, args.cluster)
    return traces.read(args.trace, models, rng, zipf, options=trace_options(args))


def _generate(args: argparse.Namespace) -> traces.Trace:
    if args.duration is not None and args.rate * args.duration > bounds.REQUESTS:
        raise traces.TraceError(
            f"--rate x --duration: {args.rate * args.duration:g} requests; at most "
            f"{bounds.REQUESTS} (thaw_kernel/bounds.py)"
        )
    if args.requests is not None and args.requests / args.rate > bounds.SECONDS:
        raise traces.TraceError(
            f"--requests / --rate: {args.requests / args.rate:g} s of arrivals; at most "
            f"{bounds.SECONDS:g} s (thaw_kernel/bounds.py), what a trace may span"
        )
    rng = seeds.rng(args.seed, "trace")
    options = trace_options(args)
    frame = synthesize(
        rng,
        catalog(args.models, args.cluster),
        rate=args.rate,
        cv=args.cv if args.arrivals == "gamma" else 1.0,
        duration=args.duration,
        count=args.requests,
        zipf_exponent=zipf_exponent(args.zipf, args.cluster),
        tokens=options.tokens,
        reference=traces.reference_tokens,
    )
    frame = transform.remap(frame, options.remap) if options.remap else frame
    frame = transform.apply(frame, options, rng, scaled=False)
    if frame.empty:
        raise traces.TraceError("generate: no requests (raise --rate or --duration)")
    return traces.Trace(frame, "synthetic", 0)


def _same_file(source: Path, out: Path) -> bool:
    """Whether writing `out` would replace the trace `source` (a user's only copy, perhaps)."""
    return source.exists() and out.exists() and out.samefile(source)


def run(args: argparse.Namespace) -> int:
    if not 0 <= args.seed <= bounds.SEED:
        raise traces.TraceError(
            f"--seed: expected an integer from 0 to {bounds.SEED} (thaw_kernel/bounds.py), "
            f"got {args.seed}"
        )
    if args.command == "stats":
        found = statistics(_read(args))
        print(json.dumps(found) if args.json else render(found))
        return 0
    if args.command == "convert" and _same_file(args.trace, args.out):
        raise traces.TraceError(
            f"{args.out}: is the trace being converted; write the converted trace elsewhere"
        )
    trace = _read(args) if args.command == "convert" else _generate(args)
    write_canonical(trace.frame, args.out)
    if trace.out_of_order:
        print(f"note: sorted {trace.out_of_order} out-of-order rows", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    return run_command(f"python -m traces {args.command}", lambda: run(args))
