"""The simulator on the replayed trace and cluster, and its error against the real replay.

Both sides' TTFTs go through the same percentile function. The relative error is signed,
(simulated - real) / real: negative when the simulator is optimistic. What dominates it
shows in the parts of TTFT, medians on each side: queueing, start-up of cold starts
(process, torch, model build and load), prefill; and in the real instances' phases next
to the profile's figures.
"""

from pathlib import Path

import numpy as np
import pandas as pd

from calibration.validate.beside import overlapping
from calibration.validate.records import Records
from calibration.validate.scenario import Layout
from sim.api import replay
from sim.config import read_config

PERCENTILES = (50, 90, 99)


def simulate(
    layout: Layout, profile: Path, policy: str, seed: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The simulator's per-request outcomes and instances for the replayed trace and
    cluster: its inputs are the trace, the cluster and the profile, nothing the replay
    measured."""
    config = read_config(layout.cluster, profile)
    sim = replay(config, layout.trace, policy, seed)
    return sim.table.frame(), sim.cluster.log.frame()


def errors(real: np.ndarray, simulated: np.ndarray) -> dict[str, float]:
    """Real and simulated TTFT percentiles and the signed relative error of each."""
    out = {}
    for q in PERCENTILES:
        r, s = float(np.percentile(real, q)), float(np.percentile(simulated, q))
        out |= {f"ttft_p{q}_real_s": r, f"ttft_p{q}_sim_s": s, f"ttft_p{q}_rel_error": s / r - 1}
    return out


def rel_errors(real: np.ndarray, simulated: np.ndarray) -> dict[str, float]:
    """The signed relative error of each TTFT percentile alone."""
    return {k: v for k, v in errors(real, simulated).items() if k.endswith("_rel_error")}


def parts(frame: pd.DataFrame) -> dict[str, float | dict[str, int]]:
    """Medians of TTFT's parts; start-up over the requests that waited for one."""
    cold = frame[frame["startup_s"] > 0]
    return {
        "requests_by_start_tier": {str(k): int(v) for k, v in frame["tier"].value_counts().items()},
        "queue_s_median": float(frame["queue_s"].median()),
        "startup_s_median_cold": float(cold["startup_s"].median()) if len(cold) else 0.0,
        "prefill_s_median": float(frame["prefill_s"].median()),
    }


def migrated(frame: pd.DataFrame) -> dict[str, int | float | None]:
    """How many requests a live migration moved, and the median pause they saw."""
    moved = frame[frame["migrations"] > 0]
    return {
        "migrated_requests": len(moved),
        "migration_pause_s_median": median_or_none(moved["migration_pause_s"]),
    }


def instance_phases(records: Records) -> dict[str, float]:
    """Medians over the real instances: spawn to torch imported (split by whether another
    instance was starting meanwhile: they share this machine's cores, where the simulator
    gives each server its own), the load, the model build."""
    rows = records.instances_frame()
    start = rows["started"] - rows["spawned"]
    spawned, started = rows["spawned"].to_numpy(), rows["started"].to_numpy()
    shared = np.array([overlapping(spawned, started, i).any() for i in range(len(rows))], bool)
    return {
        "instances": len(rows),
        "process_start_s_median": float(start.median()),
        "process_start_s_median_alone": median_or_none(start[~shared]),
        "process_start_s_median_overlapping": median_or_none(start[shared]),
        # Against the profile's `startup_cpu_s`: more work, or less of a core to do it on.
        "process_start_cpu_s_median": float(rows["started_cpu_s"].median()),
        "overlapping_starts": int(shared.sum()),
        "load_s_median": float((rows["load_ended"] - rows["load_began"]).median()),
        "build_s_median": float((rows["ready"] - rows["loaded"]).median()),
    }


def median_or_none(values: pd.Series) -> float | None:
    """The median of `values`, or None where there are none (JSON has no NaN)."""
    return float(values.median()) if len(values) else None
