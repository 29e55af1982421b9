"""Checkpoint loads by tier, real beside simulated, and the share of a cold TTFT spent
loading: what says whether a scenario is the load-dominated one it claims to be, and
whether the simulator's tiers (bandwidths, the shared disk, the download from the remote
store) hold against the real ones.

A real load runs from its `load_began` to its `load_ended` (`calibration.validate.records`:
the engine's own load, from torch imported to loaded, or a checkpoint store's read into
DRAM, from the order to the copy; from the remote store: the download, then the load
from SSD); the simulator's is its instance log's `load_s`, the same span, which begins
as the instance's start-up does where the cluster loads beside it
(`load_beside_startup`), and ends where its warm-up begins otherwise.
"""

import numpy as np
import pandas as pd

from calibration.validate.compare import median_or_none
from calibration.validate.load_span import sim_load_span
from calibration.validate.records import Records
from thaw_kernel.tiers import Tier

TIERS = (Tier.DRAM, Tier.SSD, Tier.REMOTE)  # the replay has no peer loads


def loads_by_tier_real(records: Records) -> dict[str, dict[str, float | int | None]]:
    """Per tier, the real replay's cold starts: how many, and their loads' median."""
    rows = records.instances_frame()
    return _by_tier(rows["tier"], rows["load_ended"] - rows["load_began"])


def loads_by_tier_sim(instances: pd.DataFrame) -> dict[str, dict[str, float | int | None]]:
    """Per tier, the simulated cold starts: how many, and their loads' median."""
    loaded = instances[~instances["asleep"]].dropna(subset=["load_s"])
    return _by_tier(loaded["tier"], loaded["load_s"])


def _by_tier(tiers: pd.Series, seconds: pd.Series) -> dict[str, dict[str, float | int | None]]:
    out = {}
    for tier in TIERS:
        values = seconds[(tiers == tier).to_numpy()].dropna()
        out[tier] = {"loads": len(values), "median_s": median_or_none(values)}
    return out


def load_share(records: Records, requests: pd.DataFrame) -> float | None:
    """The share of the replay's cold TTFT spent loading: over every cold request (placed
    on an instance not yet ready: the one that started it and those that joined it), the
    part of its TTFT during which its instance was loading, summed, over their TTFTs
    summed. A request's queue for a GPU and its instance's process start count against
    the share; a load that ran before the request arrived does not count for it."""
    rows = records.instances_frame()
    cold = (records.instance >= 0) & (requests["startup_s"] > 0).to_numpy()
    instance = records.instance[cold]
    return _share(
        records.arrival[cold],
        requests["ttft_s"].to_numpy()[cold],
        rows["load_began"].to_numpy()[instance],
        rows["load_ended"].to_numpy()[instance],
    )


def load_share_sim(
    requests: pd.DataFrame, instances: pd.DataFrame, warmup_s: float, beside: bool = False
) -> float | None:
    """The same share in the simulator's run, where an instance loads for its `load_s`
    up to its warm-up (its `ready_s` less `warmup_s`) or, `beside` its start-up, from its
    allocation: what says, before any real replay, whether a scenario is load-dominated."""
    cold = ((requests["startup_s"] > 0) & (requests["instance"] >= 0)).to_numpy()
    # An instance's first awake period carries its load (a woken one has more periods).
    loaded = instances[~instances["asleep"]].drop_duplicates("instance").set_index("instance")
    rows = loaded.reindex(requests["instance"].to_numpy()[cold])  # unknown: NaN, left out
    start, end = sim_load_span(rows, warmup_s, beside)
    return _share(
        requests["arrival_s"].to_numpy()[cold], requests["ttft_s"].to_numpy()[cold], start, end
    )


def _share(
    arrival: np.ndarray, ttft: np.ndarray, start: np.ndarray, end: np.ndarray
) -> float | None:
    """Each cold request's TTFT overlapped by its instance's load [start, end], summed,
    over their TTFTs summed."""
    loading = np.minimum(arrival + ttft, end) - np.maximum(arrival, start)
    valid = np.isfinite(loading) & np.isfinite(ttft)
    total = float(ttft[valid].sum())
    return float(np.maximum(loading[valid], 0.0).sum()) / total if total > 0 else None
