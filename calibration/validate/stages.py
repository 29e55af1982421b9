"""A cold start stage by stage: the real instances' medians beside the simulator's.

The real instances stamp each stage's end (`calibration.validate.instance_process`); the
simulator's side comes from its own run on the same trace (its instance log), with the
load priced from the profile's bandwidths as the simulator prices an uncontended one, and
the warm-up the profile's (`warmup_s`: the build and the first pass's one-time costs; a
real instance pays the latter in its first prefill, so compare the sums of the last two
stages).
"""

import numpy as np
import pandas as pd

from calibration.validate.records import Records

# The stages in the order a cold start runs them, with what each covers on the real side.
STAGES = {
    "runtime_start": "spawn to torch imported (and the device context made)",
    "checkpoint_load": "the real loader, from the instance's tier",
    "warmup": "the model built from the loaded weights",
    "first_prefill": "a cold request's prefill, from its instance's readiness",
}


def real_stages(records: Records, requests: pd.DataFrame) -> dict[str, float]:
    """Each stage's median over the replay's instances (the prefill: over cold requests)."""
    rows = records.instances_frame()
    cold = requests[requests["startup_s"] > 0]
    return {
        "runtime_start": _median(rows["started"] - rows["spawned"]),
        "checkpoint_load": _median(rows["loaded"] - rows["started"]),
        "warmup": _median(rows["ready"] - rows["loaded"]),
        "first_prefill": _median(cold["prefill_s"]),
    }


def sim_stages(
    requests: pd.DataFrame, instances: pd.DataFrame, sizes: dict[str, int], derived: dict
) -> dict[str, float]:
    """The same stages in the simulator's run: its start-up less the load and the warm-up
    (the runtime, stretched by any contention for host cores it modelled), the load, the
    warm-up, the cold requests' prefill."""
    started = instances.dropna(subset=["ready_s"])
    load = np.array(
        [
            sizes[str(model)] / _rate(str(tier), derived)
            for model, tier in zip(started["model"], started["tier"], strict=True)
        ]
    )
    startup = (started["ready_s"] - started["allocated_s"]).to_numpy()
    warmup = derived.get("warmup_s", 0.0)
    cold = requests[requests["startup_s"] > 0]
    return {
        "runtime_start": _median(pd.Series(startup - load - warmup)),
        "checkpoint_load": _median(pd.Series(load)),
        "warmup": warmup,
        "first_prefill": _median(cold["prefill_s"]),
    }


def _rate(tier: str, derived: dict) -> float:
    """The profile's bandwidth for a load from `tier` (as `view.Books.load_s`)."""
    rate = derived["dram_to_gpu_bytes_per_s"]
    if tier != "dram":
        rate = min(rate, derived["ssd_read_bytes_per_s"])
    return rate


def _median(values: pd.Series) -> float:
    values = values.dropna()
    return float(values.median()) if len(values) else float("nan")
