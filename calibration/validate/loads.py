"""Checkpoint loads by tier, real beside simulated, and the share of a cold TTFT spent
loading: what says whether a scenario is the load-dominated one it claims to be, and
whether the simulator's tiers (bandwidths, the shared disk, the download from the remote
store) hold against the real ones.

A real load runs from the instance's `started` to its `loaded` (from the remote store:
the download, then the load from SSD); the simulator's is its instance log's `load_s`,
the same span.
"""

import numpy as np
import pandas as pd

from calibration.validate.records import Records
from thaw_kernel.tiers import Tier

TIERS = (Tier.DRAM, Tier.SSD, Tier.REMOTE)  # the replay has no peer loads


def loads_by_tier_real(records: Records) -> dict[str, dict[str, float | int | None]]:
    """Per tier, the real replay's cold starts: how many, and their loads' median."""
    rows = records.instances_frame()
    return _by_tier(rows["tier"], rows["loaded"] - rows["started"])


def loads_by_tier_sim(instances: pd.DataFrame) -> dict[str, dict[str, float | int | None]]:
    """Per tier, the simulated cold starts: how many, and their loads' median."""
    loaded = instances[~instances["asleep"]].dropna(subset=["load_s"])
    return _by_tier(loaded["tier"], loaded["load_s"])


def _by_tier(tiers: pd.Series, seconds: pd.Series) -> dict[str, dict[str, float | int | None]]:
    out = {}
    for tier in TIERS:
        values = seconds[(tiers == tier).to_numpy()].dropna()
        out[tier] = {"loads": len(values), "median_s": _median(values)}
    return out


def load_share(records: Records, requests: pd.DataFrame) -> float | None:
    """The share of cold TTFT spent loading: over every instance, its load and the TTFT
    of the request that started it (the first placed on it), each summed."""
    rows = records.instances_frame()
    placed = pd.DataFrame(
        {"instance": records.instance, "at": records.placed_at, "ttft_s": requests["ttft_s"]}
    )
    cold = placed[(placed["instance"] >= 0) & (requests["startup_s"] > 0).to_numpy()]
    starters = cold.sort_values(["at", "instance"]).groupby("instance").head(1)
    load = (rows["loaded"] - rows["started"]).to_numpy()[starters["instance"].to_numpy()]
    ttft = starters["ttft_s"].to_numpy()
    valid = np.isfinite(load) & np.isfinite(ttft)
    total = float(ttft[valid].sum())
    return float(load[valid].sum()) / total if total > 0 else None


def _median(values: pd.Series) -> float | None:
    return float(values.median()) if len(values) else None
