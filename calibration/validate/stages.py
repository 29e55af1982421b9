"""A cold start stage by stage: the real instances' medians beside the simulator's.

The real instances stamp each stage's end (`calibration.validate.instance_process`); the
simulator's side comes from its own run on the same trace (its instance log, whose
`load_s` is each load as the simulator ran it, sharing links with the others), and
the warm-up the profile's (`warmup_s`: the build and the first pass's one-time costs; a
real instance pays the latter in its first prefill, so compare the sums of the last two
stages).
"""

import numpy as np
import pandas as pd

from calibration.validate.records import Records
from sim.spec import ClusterConfig

# The stages in the order a cold start runs them, with what each covers on the real side.
STAGES = {
    "runtime_start": "spawn to torch imported (and the device context made)",
    "checkpoint_load": "the real loader, from the instance's tier (or its server's store)",
    "checkpoint_copy": "with stores: the engine's take of its weights from the DRAM copy",
    "warmup": "the model built from the loaded weights",
    "first_prefill": "a cold request's prefill, from its instance's readiness",
}


def real_stages(records: Records, requests: pd.DataFrame) -> dict[str, float]:
    """Each stage's median over the replay's instances (the prefill: over cold requests)."""
    rows = records.instances_frame()
    cold = requests[requests["startup_s"] > 0]
    return {
        "runtime_start": _median(rows["started"] - rows["spawned"]),
        "checkpoint_load": _median(rows["load_ended"] - rows["load_began"]),
        "checkpoint_copy": _median(rows["loaded"] - rows["copy_began"]),
        "warmup": _median(rows["ready"] - rows["loaded"]),
        "first_prefill": _median(cold["prefill_s"]),
    }


def sim_stages(
    requests: pd.DataFrame, instances: pd.DataFrame, derived: dict, config: ClusterConfig
) -> dict[str, float]:
    """The same stages in the simulator's run: its runtime (stretched by any contention
    for host cores it modelled), the load, the engine's copy where it has one (its
    weights over its PCIe lanes), the warm-up, the cold requests' prefill."""
    started = instances.dropna(subset=["ready_s", "load_s"])
    warmup = derived.get("warmup_s", 0.0)
    cold = requests[requests["startup_s"] > 0]
    return {
        "runtime_start": _median(started["runtime_s"]),
        "checkpoint_load": _median(started["load_s"]),
        "checkpoint_copy": _median(copy_s(started, config)),
        "warmup": warmup,
        "first_prefill": _median(cold["prefill_s"]),
    }


def copy_s(instances: pd.DataFrame, config: ClusterConfig) -> pd.Series:
    """Each simulated instance's copy of its weights onto its GPUs (NaN without one)."""
    pcie = config.servers[0].pcie  # the replay's servers are alike
    return pd.Series(
        [
            config.models[name].pcie_s(pcie) if config.copies(name) else np.nan
            for name in instances["model"]
        ],
        dtype=float,
    )


def _median(values: pd.Series) -> float:
    values = values.dropna()
    return float(values.median()) if len(values) else float("nan")
