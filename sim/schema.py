"""The results schema, shared by the writers in `sim` and the readers in `analysis`.

A run directory holds `requests.parquet`, `instances.parquet`, `summary.json` and
`config.toml`; a sweep
directory holds `sweep.parquet` (one row per run) and `runs/<run>/`. This module says
what those names are and how one summary becomes one table row, so that a sweep's table
and `analysis` agree. It imports nothing of the simulator: `analysis` may import it.
"""

import json
import math
from pathlib import Path
from typing import Any

from thaw_kernel.tiers import LOAD_TIERS, START_TIERS
from thaw_kernel.user_files import read_bytes

# A request's end: still pending (only while a run goes on), done, cut short by a time
# limit (`timeout`), or turned away unserved by the `drop` queue discipline (`dropped`);
# the `status` column's categories, in this order.
STATUSES = ("pending", "done", "timeout", "dropped")
REQUESTS = "requests.parquet"
INSTANCES = "instances.parquet"
SUMMARY = "summary.json"
CONFIG = "config.toml"
SWEEP_TABLE = "sweep.parquet"
SWEEP_RUNS = "runs"
COORDINATES = ("policy", "trace", "rate_scale", "cluster", "seed", "keep_alive")
KEEP_ALIVE_BEFORE = "fixed"  # what runs written before keep-alive was a policy ran under
SCHEMA_VERSION = 1  # of summary.json: readers refuse any other

__all__ = [
    "CONFIG",
    "COORDINATES",
    "INSTANCES",
    "LOAD_TIERS",
    "REQUESTS",
    "SCHEMA_VERSION",
    "START_TIERS",
    "STATUSES",
    "SUMMARY",
    "SWEEP_RUNS",
    "SWEEP_TABLE",
    "coordinates",
    "read_summary",
    "summary_problem",
    "summary_row",
]


# What `analysis` reads of every summary, and what each must be: a summary without one
# of them, or with something else there, is damaged (`summary_problem`). "number?" may
# also be null: the writer's word for a figure over no requests.
_READ_FIELDS = {
    "policy": "string",
    "seed": "integer",
    "requests": "integer",
    "completed": "integer",
    "ttft_p50_s": "number?",
    "ttft_p99_s": "number?",
    "gpu_seconds": "number",
    "simulated_s": "number",
    "migrations": "integer",
    "migration_pause_p99_s": "number?",
    "preemptions": "integer",
    **{f"loads_by_tier.{tier}": "integer" for tier in LOAD_TIERS if tier != "peer"},
}
# Where a run sits: a sweep's run records its point, a single run its trace and config.
_SWEEP_FIELDS = {f"sweep.{key}": "any" for key in COORDINATES if key != "keep_alive"}
_RUN_FIELDS = {"trace.path": "string", "config_sha256": "string"}


def summary_problem(summary: Any) -> str | None:
    """What makes a parsed summary unreadable (a key missing, a value of another type, a
    number that is not finite, anywhere in it), or None."""
    if not isinstance(summary, dict):
        return f"expected a JSON object, got {type(summary).__name__}"
    where = _SWEEP_FIELDS if "sweep" in summary else _RUN_FIELDS
    for key, kind in {**_READ_FIELDS, **where}.items():
        value: Any = summary
        for part in key.split("."):
            if not isinstance(value, dict) or part not in value:
                return f"{key}: missing"
            value = value[part]
        if not _is(value, kind):
            return f"{key}: expected {kind.rstrip('?')}, got {value!r:.40}"
    return _non_finite("", summary)


def _is(value: Any, kind: str) -> bool:
    if kind == "any":
        return True
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if value is None:
        return kind == "number?"
    return isinstance(value, int | float) and not isinstance(value, bool)


def _non_finite(prefix: str, value: Any) -> str | None:
    """The first key, nested keys joined with dots, whose value is NaN or infinite."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"{prefix}: {value!r} is not a finite number"
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    for key, inner in items:
        problem = _non_finite(f"{prefix}.{key}" if prefix else str(key), inner)
        if problem:
            return problem
    return None


def read_summary(run_dir: Path) -> dict | None:
    """The run's summary, or None if it has none or it does not parse (an unfinished run).

    Run directories are written atomically, so a summary that parses is complete.
    """
    path = run_dir / SUMMARY
    if not path.exists():
        return None
    data = read_bytes(path)  # a FIFO or device is refused by name, never read (it may hang)
    try:
        summary = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    return summary if isinstance(summary, dict) and "ttft_p99_s" in summary else None


def coordinates(summary: dict) -> dict[str, Any]:
    """Where a run sits in a grid: a sweep records it; a single run gets rate scale 1,
    its trace file's name, and its configuration's hash as the cluster's name. The
    keep-alive is the policy the run ran under, as its summary says."""
    keep_alive = summary.get("keep_alive", KEEP_ALIVE_BEFORE)
    if "sweep" in summary:
        record = {"keep_alive": keep_alive, **summary["sweep"]}  # it names it when it varies
        return {key: record[key] for key in COORDINATES}
    return {
        "policy": summary["policy"],
        "trace": Path(summary["trace"]["path"]).stem,
        "rate_scale": 1.0,
        "cluster": f"config-{summary['config_sha256'][:8]}",
        "seed": summary["seed"],
        "keep_alive": keep_alive,
    }


def summary_row(summary: dict) -> dict[str, Any]:
    """One flat row: the coordinates first, then every summary field, nested keys joined
    with dots (`loads_by_tier.dram`, `trace.sha256`)."""
    row = coordinates(summary)

    def flatten(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                flatten(f"{prefix}.{key}" if prefix else key, inner)
        elif prefix not in row:
            row[prefix] = value

    flatten("", {key: value for key, value in summary.items() if key != "sweep"})
    for tier in LOAD_TIERS:  # a summary from before the peer tier has no `peer` count
        row.setdefault(f"loads_by_tier.{tier}", 0)
    return row
