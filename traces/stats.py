"""What `python -m traces stats` reports: size, rate, burstiness, models, token lengths."""

import numpy as np

from traces import Trace

PERCENTILES = (50, 90, 99)


def _tokens(values: np.ndarray) -> dict:
    found = {"mean": float(values.mean())}
    found.update({f"p{q}": float(np.percentile(values, q)) for q in PERCENTILES})
    found["max"] = int(values.max())
    return found


def statistics(trace: Trace) -> dict:
    """rows/duration is the mean rate (as in docs/traces.md); the inter-arrival
    CV uses the population standard deviation (1 for a Poisson process, 0 for a clock)."""
    frame = trace.frame
    t = frame["arrival_s"].to_numpy()
    rows = len(t)
    duration = float(t[-1] - t[0]) if rows else 0.0
    gaps = np.diff(t)
    cv = float(gaps.std() / gaps.mean()) if rows > 2 and gaps.mean() > 0 else None
    counts = frame["model"].value_counts(sort=True)
    return {
        "format": trace.format,
        "rows": rows,
        "duration_s": duration,
        "mean_rps": rows / duration if duration > 0 else None,
        "interarrival_cv": cv,
        "out_of_order_rows": trace.out_of_order,
        "models": {str(name): int(n) for name, n in counts.items() if n},
        "input_tokens": _tokens(frame["input_tokens"].to_numpy()) if rows else None,
        "output_tokens": _tokens(frame["output_tokens"].to_numpy()) if rows else None,
        **trace.notes,
    }


def render(stats: dict) -> str:
    """The statistics as an aligned two-column table."""

    def number(value: object, digits: int = 3) -> str:
        if value is None:
            return "n/a"
        return f"{value:,.{digits}f}" if isinstance(value, float) else f"{value:,}"

    rows = [
        ("format", stats["format"]),
        ("rows", number(stats["rows"])),
        ("duration", f"{number(stats['duration_s'], 1)} s"),
        ("mean rate", f"{number(stats['mean_rps'])} req/s"),
        ("inter-arrival CV", number(stats["interarrival_cv"], 2)),
        ("out-of-order rows", number(stats["out_of_order_rows"])),
    ]
    for side in ("input_tokens", "output_tokens"):
        if stats[side]:
            parts = ", ".join(f"{k} {number(v, 0)}" for k, v in stats[side].items())
            rows.append((side.replace("_", " "), parts))
    rows += [(f"model {name}", number(n)) for name, n in stats["models"].items()]
    known = {
        "format",
        "rows",
        "duration_s",
        "mean_rps",
        "interarrival_cv",
        "out_of_order_rows",
        "models",
        "input_tokens",
        "output_tokens",
    }
    rows += [(key.replace("_", " "), number(v)) for key, v in stats.items() if key not in known]
    return "\n".join(f"{name:<24} {value}" for name, value in rows)
