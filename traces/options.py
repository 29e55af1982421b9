"""How a trace becomes the workload: mapping and placement for invocation counts, token
lengths where the trace has none, and transformations. Shared by `python -m traces` and
`python -m sim run`, so both take the same flags with the same meaning."""

import argparse
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from thaw_kernel import bounds
from traces.mapping import MAPPINGS
from traces.placement import PLACEMENTS
from traces.tokens import check_spec


@dataclass(frozen=True)
class Options:
    format: str | None = None  # None: detected from the header
    mapping: str = "stripe"
    placement: str = "uniform"
    cv: float = 1.0
    scale: float = 1.0
    window: tuple[float, float] | None = None
    tokens: str = "trace"
    durations: Path | None = None
    memory: Path | None = None
    compress: float = 1.0
    thin: float = 1.0
    replicate: float = 1.0
    remap: dict[str, str] = field(default_factory=dict)


def _number(text: str, accept: Callable[[float], bool], want: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and accept(value)):
        raise argparse.ArgumentTypeError(f"expected {want}, got {text!r}")
    return value


def up_to(high: float, low: float = 0.0) -> Callable[[str], float]:
    """A parser of numbers in (low, high] (thaw_kernel/bounds.py says why `high`)."""
    return lambda text: _number(
        text, lambda v: low < v <= high, f"a number > {low:g} and <= {high:g}"
    )


def between(low: float, high: float) -> Callable[[str], float]:
    """A parser of numbers in [low, high]."""
    return lambda text: _number(text, lambda v: low <= v <= high, f"{low:g} to {high:g}")


def _fraction(text: str) -> float:
    return _number(text, lambda v: 0 < v <= 1, "a number in (0, 1]")


def _replicate(text: str) -> float:
    return _number(text, lambda v: 1 <= v <= bounds.REPLICATE, f"1 to {bounds.REPLICATE}")


def _compress(text: str) -> float:
    low, high = 1 / bounds.SCALE, bounds.SCALE
    return _number(text, lambda v: low <= v <= high, f"a number from {low:g} to {high:g}")


def _window(text: str) -> tuple[float, float]:
    start, sep, end = text.partition(":")
    try:
        window = (float(start or 0), float(end) if end else float("inf"))
    except ValueError:
        window = (float("nan"), 0.0)
    if window[0] > bounds.SECONDS or bounds.SECONDS < window[1] < float("inf"):
        raise argparse.ArgumentTypeError(f"expected seconds up to {bounds.SECONDS:g}: {text!r}")
    if not sep or not 0 <= window[0] < window[1]:
        raise argparse.ArgumentTypeError(f"expected START:END seconds, 0 <= START < END: {text!r}")
    return window


def _remap(text: str) -> dict[str, str]:
    pairs = [item.partition("=") for item in text.split(",")]
    if not all(old.strip() and sep and new.strip() for old, sep, new in pairs):
        raise argparse.ArgumentTypeError(f"expected OLD=NEW[,OLD=NEW...], got {text!r}")
    olds = [old.strip() for old, _, _ in pairs]
    twice = sorted({old for old in olds if olds.count(old) > 1})
    if twice:
        raise argparse.ArgumentTypeError(f"{twice[0]!r} is renamed twice, in {text!r}")
    return {old.strip(): new.strip() for old, _, new in pairs}


def _tokens(text: str) -> str:
    try:
        check_spec(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return text


def add_trace_options(parser: argparse.ArgumentParser, formats: list[str] | None) -> None:
    """The flags for reading a trace (when `formats` is given), drawing what it lacks, and
    transforming it."""
    group = parser.add_argument_group("trace reading and transformation")
    add = group.add_argument
    if formats is not None:
        add(
            "--format",
            choices=formats,
            default=None,
            help="force the trace format (default: detected from the header)",
        )
        add(
            "--mapping",
            choices=MAPPINGS,
            default="stripe",
            help="functions -> models for Azure Functions traces (default: stripe)",
        )
        add(
            "--placement",
            choices=PLACEMENTS,
            default="uniform",
            help="where a minute's invocations fall within it (default: uniform)",
        )
        add(
            "--durations",
            type=Path,
            default=None,
            help="Azure Functions 2019 durations file (checked; summarised by stats)",
        )
        add(
            "--memory",
            type=Path,
            default=None,
            help="Azure Functions 2019 memory file, either layout (checked; summarised)",
        )
    add(
        "--cv",
        type=between(1 / bounds.CV, bounds.CV),
        default=1.0,
        help="inter-arrival CV of gamma arrivals (default: 1)",
    )
    add(
        "--tokens",
        type=_tokens,
        default="trace",
        metavar="SPEC",
        help="token lengths where the trace has none: trace, trace:PATH, "
        "lognormal:IN_MEAN,IN_CV,OUT_MEAN,OUT_CV or fixed:IN,OUT (default: trace)",
    )
    add(
        "--scale",
        type=up_to(bounds.SCALE),
        default=1.0,
        help="rate factor: multiplies the minute counts of Functions 2019; elsewhere "
        "thins (< 1) or replicates (> 1) (default: 1)",
    )
    add(
        "--window",
        type=_window,
        default=None,
        metavar="START:END",
        help="keep arrivals in [START, END) seconds, shifted to start at 0",
    )
    add(
        "--compress",
        type=_compress,
        default=1.0,
        help="divide arrival times by this factor (default: 1)",
    )
    add(
        "--thin",
        type=_fraction,
        default=1.0,
        help="keep each request with this probability (default: 1)",
    )
    add(
        "--replicate",
        type=_replicate,
        default=1.0,
        help="superpose this many time-shifted copies (default: 1)",
    )
    add(
        "--remap",
        type=_remap,
        default={},
        metavar="OLD=NEW,...",
        help="rename models (several may merge)",
    )


def trace_options(args: argparse.Namespace) -> Options:
    return Options(
        format=getattr(args, "format", None),
        mapping=getattr(args, "mapping", "stripe"),
        placement=getattr(args, "placement", "uniform"),
        cv=args.cv,
        scale=args.scale,
        window=args.window,
        tokens=args.tokens,
        durations=getattr(args, "durations", None),
        memory=getattr(args, "memory", None),
        compress=args.compress,
        thin=args.thin,
        replicate=args.replicate,
        remap=args.remap,
    )
