"""The run's summary.json: TTFT percentiles, loads by tier, cost, speed, scheduling figures
per model, provenance."""

import hashlib
import platform
from importlib import metadata
from pathlib import Path

import numpy as np

from sim.engine.simulator import Simulation
from sim.schema import SCHEMA_VERSION, STATUSES
from thaw_kernel.tiers import LOAD_TIERS, START_TIERS, Tier


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


def _per_model(sim: Simulation) -> dict:
    """Per model: requests, p99 TTFT and queue time, SLO attainment and mean slowdown
    (see `scheduling_figures`)."""
    t = sim.table
    done = t.status == STATUSES.index("done")
    out = {}
    for code, (name, spec) in enumerate(sim.config.models.items()):
        mine = t.model == code
        ok = mine & done
        within = np.nan_to_num(t.ttft_s[mine], nan=np.inf) <= spec.ttft_slo_s
        alone = t.input_tokens[ok] / spec.prefill_tokens_per_s
        out[name] = {
            "requests": int(mine.sum()),
            "ttft_p99_s": _percentile(t.ttft_s[ok], 99),
            "queue_p99_s": _percentile(t.queue_s[ok], 99),
            "ttft_slo_s": spec.ttft_slo_s,
            "slo_attainment": float(within.mean()) if mine.any() else None,
            "slowdown_mean": float((t.ttft_s[ok] / alone).mean()) if ok.any() else None,
        }
    return out


def jain_index(values: list[float]) -> float | None:
    """Jain's fairness index, (sum x)^2 / (n sum x^2): 1 when all are equal, 1/n when one
    takes all; None over no values."""
    x = np.asarray(values, dtype=float)
    return float(x.sum() ** 2 / (len(x) * (x**2).sum())) if len(x) else None


def scheduling_figures(sim: Simulation) -> dict:
    """What the scheduler's decisions cost and whom they favour (docs/scheduling.md):

    - TTFT SLO attainment: the share of requests whose TTFT is within their model's
      `ttft_slo_s` (a request that never produced a token misses it);
    - cold-start ratio: the share of placed requests that waited for an instance to
      start rather than join a warm one;
    - GPU-seconds split into starting (allocated, not yet warm), idle-warm (warm, holding
      no request), sleeping (the share of their GPUs' memory sleeping engines keep,
      `sim.model.sleepers`) and serving (the rest);
    - fairness: Jain's index over the models' mean slowdown, a request's slowdown being
      its TTFT over its own prefill time (its TTFT on a warm, idle instance).
    """
    t = sim.table
    per_model = _per_model(sim)
    placed = t.tier >= 0
    warm = START_TIERS.index(Tier.WARM)
    cluster = sim.cluster
    starting, idle = cluster.starting_gpu_seconds, cluster.idle_gpu_seconds
    sleeping = sim.sleepers.gpu_seconds if sim.sleepers is not None else 0.0
    slowdowns = [m["slowdown_mean"] for m in per_model.values() if m["slowdown_mean"]]
    within = sum(m["slo_attainment"] * m["requests"] for m in per_model.values() if m["requests"])
    return {
        "per_model": per_model,
        "ttft_slo_attainment": within / t.n if t.n else None,
        "cold_start_ratio": float((t.tier[placed] != warm).mean()) if placed.any() else None,
        "gpu_seconds_by_state": {
            "serving": cluster.gpu_seconds - starting - idle - sleeping,
            "idle_warm": idle,
            "starting": starting,
            "sleeping": sleeping,
        },
        "fairness_jain_slowdown": jain_index(slowdowns),
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
        "queue": sim.config.queue,
        "keep_alive": sim.config.keep_alive.text,
        "seed": seed,
        "requests": int(t.n),
        "completed": int(done.sum()),
        "timed_out": int((t.status == STATUSES.index("timeout")).sum()),
        "dropped": int((t.status == STATUSES.index("dropped")).sum()),
        "stopped_at_s": sim.stopped_at,
        "ttft_p50_s": _percentile(ttft, 50),
        "ttft_p90_s": _percentile(ttft, 90),
        "ttft_p99_s": _percentile(ttft, 99),
        "ttft_mean_s": float(ttft.mean()) if len(ttft) else None,
        "e2e_p99_s": _percentile(t.e2e_s[done], 99),
        "loads_by_tier": {tier.value: sim.loads_by_tier.get(tier, 0) for tier in LOAD_TIERS},
        "cold_starts": int(sum(sim.loads_by_tier.values())),
        "requests_by_start_tier": {
            tier.value: int(n) for tier, n in zip(START_TIERS, counts, strict=True)
        },
        "migrations": sim.migrations,
        "migrations_moved": sim.migrations_moved,
        "migrated_requests": int((t.migrations > 0).sum()),
        "migration_pause_p99_s": _percentile(t.migration_pause_s[t.migrations > 0], 99),
        "preemptions": sim.preemptions,
        "prewarms": sim.prewarms,
        "prewarm_hits": sim.prewarm_hits,
        "wakes": sum(sim.sleepers.wakes.values()) if sim.sleepers is not None else 0,
        "wakes_by_level": {
            str(level): sim.sleepers.wakes[level] if sim.sleepers is not None else 0
            for level in (1, 2)
        },
        "preempted_requests": int((t.preemptions > 0).sum()),
        "wasted_tokens": t.wasted_tokens,
        **_estimator_error(t.estimate_s, t.startup_s),
        "gpu_seconds": sim.cluster.gpu_seconds,
        **scheduling_figures(sim),
        "simulated_s": sim.clock.last_event_s if sim.stopped_at is None else sim.stopped_at,
        "events": sim.clock.fired,
        "events_per_request": sim.clock.fired / t.n if t.n else None,
        "sim_wall_s": sim.wall_s,
        "requests_per_wall_s": t.n / sim.wall_s if sim.wall_s > 0 else None,
        "trace": {"path": str(trace_path), "sha256": file_sha256(trace_path)},
        "config_sha256": hashlib.sha256(sim.config.to_toml().encode()).hexdigest(),
        "versions": _versions(),
    }
