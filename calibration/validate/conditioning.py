"""How much a percentile's error can say: its conditioning, and the error as a rank.

A TTFT percentile that falls in a gap of the distribution (between the loads from SSD,
about 2 s, and the downloads from the store, about 7 s, where half of a policy's
requests wait on the store) moves by seconds when a few requests change sides, and a
few change sides when any stage is a little faster or slower. Two figures say whether a
percentile's relative error measures the model there:

- its sensitivity: how far the simulator's own percentile moves when every speed of the
  profile is `STEP` faster or slower (the larger of the two moves). A percentile that
  moves 20% for a 5% change in every stage cannot be predicted within 10% by a model
  whose inputs are measured to within 5% on a noisy machine;
- its rank error: the share of simulated requests below the real percentile, less the
  percentile's own share. Where the relative error counts seconds across a gap, the
  rank error counts requests: -0.04 at p50 means the simulator puts 46% of the requests
  below the real median.
"""

import json
from pathlib import Path

import numpy as np

from calibration.validate.compare import PERCENTILES, simulate
from calibration.validate.scenario import Layout

STEP = 1.05  # every speed this much faster, then this much slower


def rank_errors(real: np.ndarray, simulated: np.ndarray) -> dict[str, float]:
    """Per percentile q: the share of `simulated` below the real q-th percentile (ties
    count half), less q / 100. A simulated request never served counts above every
    percentile; a real one leaves the figures undefined (NaN), as it does the real
    percentiles (`compare.errors`)."""
    simulated = np.sort(np.nan_to_num(simulated, nan=np.inf))
    out = {}
    for q in PERCENTILES:
        at = float(np.percentile(real, q))
        if not np.isfinite(at):
            out[f"ttft_p{q}_rank_error"] = float("nan")
            continue
        below = np.searchsorted(simulated, at, "left")
        ties = np.searchsorted(simulated, at, "right") - below
        out[f"ttft_p{q}_rank_error"] = float((below + ties / 2) / len(simulated) - q / 100)
    return out


def sensitivities(
    layout: Layout, profile: Path, policy: str, seed: int, simulated: np.ndarray
) -> dict[str, float]:
    """Per percentile, the largest |p(scaled) / p - 1| of the simulator's TTFT when every
    speed of `profile` is `STEP` faster and `STEP` slower (`simulated`: its TTFTs as
    predicted; a request it never served, NaN, leaves the figures NaN)."""
    base = {q: float(np.percentile(simulated, q)) for q in PERCENTILES}
    moves: dict[int, list[float]] = {q: [] for q in PERCENTILES}
    for factor in (STEP, 1 / STEP):
        scaled = layout.work / f"{policy}-profile-speeds-x{factor:.4f}.json"
        try:
            scaled_profile(profile, factor, scaled)
            table, _ = simulate(layout, scaled, policy, seed)
        finally:
            scaled.unlink(missing_ok=True)
        for q in PERCENTILES:
            moves[q].append(abs(float(np.percentile(table["ttft_s"], q)) / base[q] - 1))
    return {f"ttft_p{q}_sensitivity": float(np.max(moves[q])) for q in PERCENTILES}


def scaled_profile(profile: Path, factor: float, out: Path) -> Path:
    """`profile` with every speed `factor` times as fast, written to `out`."""
    document = json.loads(profile.read_text(encoding="utf-8-sig"))
    document["derived"] = scaled_speeds(document["derived"], factor)
    out.write_text(json.dumps(document, indent=2) + "\n")
    return out


def scaled_speeds(derived: dict[str, float], factor: float) -> dict[str, float]:
    """Rates (`..._per_s`) times `factor`; times and CPU costs (`..._s`, `..._s_per_...`)
    over it; counts, sizes and dimensionless figures (`host_cores`,
    `reference_model_bytes`, `startup_company_slowdown`) as they are."""
    out = {}
    for key, value in derived.items():
        if key.endswith("_per_s"):
            out[key] = value * factor
        elif key.endswith("_s") or "_s_per_" in key:
            out[key] = value / factor
        else:
            out[key] = value
    return out
