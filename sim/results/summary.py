"""The run's summary.json: TTFT percentiles, loads by tier, cost, speed, provenance."""

import hashlib
import platform
from importlib import metadata
from pathlib import Path

import numpy as np

from sim.common.tiers import START_TIERS
from sim.results.request_table import STATUSES
from sim.results.schema import SCHEMA_VERSION
from sim.simulator import Simulation


def _percentile(values: np.ndarray, q: float) -> float | None:
    return float(np.percentile(values, q)) if len(values) else None


def _estimator_error(estimate: np.ndarray, actual: np.ndarray) -> dict[str, float | None]:
    """|estimated - actual| startup over the decisions that made an estimate."""
    made = ~np.isnan(estimate) & ~np.isnan(actual)
    error = np.abs(estimate[made] - actual[made])
    return {
        "estimates": int(made.sum()),
        "estimator_abs_error_p50_s": _percentile(error, 50),
        "estimator_abs_error_p99_s": _percentile(error, 99),
    }


def _versions() -> dict[str, str]:
    names = ["thaw", "simpy", "numpy", "pandas", "pyarrow"]
    found = {"python": platform.python_version()}
    for name in names:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def summarize(sim: Simulation, policy: str, seed: int, trace_path: Path) -> dict:
    t = sim.table
    done = t.status == STATUSES.index("done")
    ttft = t.ttft_s[done]
    counts = np.bincount(t.tier[t.tier >= 0], minlength=len(START_TIERS))
    return {
        "schema_version": SCHEMA_VERSION,
        "policy": policy,
        "seed": seed,
        "requests": int(t.n),
        "completed": int(done.sum()),
        "timed_out": int((t.status == STATUSES.index("timeout")).sum()),
        "stopped_at_s": sim.stopped_at,
        "ttft_p50_s": _percentile(ttft, 50),
        "ttft_p90_s": _percentile(ttft, 90),
        "ttft_p99_s": _percentile(ttft, 99),
        "ttft_mean_s": float(ttft.mean()) if len(ttft) else None,
        "e2e_p99_s": _percentile(t.e2e_s[done], 99),
        "loads_by_tier": {tier.value: n for tier, n in sim.loads_by_tier.items()},
        "cold_starts": int(sum(sim.loads_by_tier.values())),
        "requests_by_start_tier": {
            tier.value: int(n) for tier, n in zip(START_TIERS, counts, strict=True)
        },
        "migrations": sim.migrations,
        "migrations_moved": sim.migrations_moved,
        "migrated_requests": int((t.migrations > 0).sum()),
        "migration_pause_p99_s": _percentile(t.migration_pause_s[t.migrations > 0], 99),
        "preemptions": sim.preemptions,
        "preempted_requests": int((t.preemptions > 0).sum()),
        "wasted_tokens": t.wasted_tokens,
        **_estimator_error(t.estimate_s, t.startup_s),
        "gpu_seconds": sim.cluster.gpu_seconds,
        "simulated_s": sim.clock.last_event_s if sim.stopped_at is None else sim.stopped_at,
        "events": sim.clock.fired,
        "events_per_request": sim.clock.fired / t.n if t.n else None,
        "sim_wall_s": sim.wall_s,
        "requests_per_wall_s": t.n / sim.wall_s if sim.wall_s > 0 else None,
        "trace": {"path": str(trace_path), "sha256": file_sha256(trace_path)},
        "config_sha256": hashlib.sha256(sim.config.to_toml().encode()).hexdigest(),
        "versions": _versions(),
    }
