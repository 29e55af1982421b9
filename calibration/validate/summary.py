"""One policy's repeats, summed up: the median over repeats and the range across them.

A single replay's percentile error moves by tens of percent from one trace to the next
(a handful of cold starts, placements that part ways after one slower start, a machine
shared with other work); the median over repeats with different seeds says what the
simulator gets right, the range how much one run can tell. Beside the signed median,
the median of the errors' sizes (what the validation's goals are stated on), and the
percentiles of every repeat's requests pooled (`pooled`): a percentile over them all
rests on more requests than any one repeat's. Where a trace was replayed more than once,
how far its real replays part (`replay_spread`): the real side's own noise.
"""

import numpy as np

from calibration.validate.beside import company_order
from calibration.validate.compare import PERCENTILES, errors
from calibration.validate.conditioning import rank_errors
from calibration.validate.loads import TIERS
from calibration.validate.paired import STAGES as STAGES_PAIRED
from calibration.validate.served import SERVED
from calibration.validate.stages import STAGES


def summarize(repeats: list[dict]) -> dict:
    """Per percentile: the real and simulated TTFT and the signed error, median over
    `repeats` (each a `_validate_policy` result), with the errors' range; per stage, the
    real and simulated medians, median over repeats; the requests each side migrated,
    summed over repeats."""
    out: dict = {"repeats": len(repeats)}
    for q in PERCENTILES:
        for side in ("real_s", "sim_s"):
            out[f"ttft_p{q}_{side}"] = _median([r[f"ttft_p{q}_{side}"] for r in repeats])
        error = [r[f"ttft_p{q}_rel_error"] for r in repeats]
        out[f"ttft_p{q}_rel_error"] = _median(error)
        out[f"ttft_p{q}_abs_rel_error"] = _median([abs(e) for e in error])
        out[f"ttft_p{q}_rel_error_range"] = [float(min(error)), float(max(error))]
        # How much the error can say (calibration.validate.conditioning).
        out[f"ttft_p{q}_sensitivity"] = _median([r[f"ttft_p{q}_sensitivity"] for r in repeats])
        rank = [r[f"ttft_p{q}_rank_error"] for r in repeats]
        out[f"ttft_p{q}_rank_error"] = _median(rank)
        out[f"ttft_p{q}_abs_rank_error"] = _median([abs(e) for e in rank])
    # The same errors' medians with the profile's start-up as measured, not timed again.
    out["with_profile_startup"] = {
        key: _median([r["with_profile_startup"][key] for r in repeats])
        for key in repeats[0]["with_profile_startup"]
    }
    out["stages"] = {
        stage: {
            side: _median([r["stages"][stage][side] for r in repeats])
            for side in ("real_s", "sim_s")
        }
        for stage in STAGES
    }
    out["migrated_requests"] = {
        side: sum(r[side]["migrated_requests"] for r in repeats) for side in ("real", "sim")
    }
    for side in ("real", "sim"):
        key = f"loads_by_tier_{side}"
        out[key] = _by_tier([r[key] for r in repeats], TIERS, "loads", "median_s")
        key = f"requests_by_tier_{side}"
        out[key] = _by_tier([r[key] for r in repeats], SERVED, "requests", "ttft_median_s")
    for side in ("real", "sim"):
        key = f"load_share_{side}"
        out[key] = _or_none(_median([r[key] or np.nan for r in repeats]))
    out["runtime_start_beside"] = beside_over_repeats([r["runtime_start_beside"] for r in repeats])
    out["paired_stages"] = paired_over_repeats([r["paired_stages"] for r in repeats])
    return out | replay_spread(repeats)


def beside_over_repeats(runs: list[dict]) -> dict[str, dict[str, float | int | None]]:
    """Per company, the start-ups counted over the repeats and each side's median over
    the repeats' medians (a repeat without such start-ups on a side leaves it out)."""
    labels = sorted({label for run in runs for label in run}, key=company_order)
    out = {}
    for label in labels:
        rows = [run[label] for run in runs if label in run]
        out[label] = {}
        for side in ("real", "sim"):
            medians = [row[f"{side}_s"] for row in rows if row[f"{side}_s"] is not None]
            out[label][f"{side}_n"] = sum(row[f"{side}_n"] for row in rows)
            out[label][f"{side}_s"] = _or_none(_median(medians)) if medians else None
    return out


def paired_over_repeats(runs: list[dict]) -> dict:
    """The starts both sides shared, counted over the repeats; per stage and company, the
    pairs counted and each figure's median over the repeats that had such pairs."""
    out: dict = {key: sum(run[key] for run in runs) for key in ("pairs", "instances")}
    for stage in STAGES_PAIRED:
        labels = sorted(
            {label for run in runs for label in run[stage]},
            key=lambda label: (label != "all", company_order(label)),
        )
        out[stage] = {}
        for label in labels:
            rows = [run[stage][label] for run in runs if run[stage].get(label, {}).get("n")]
            out[stage][label] = {"n": sum(row["n"] for row in rows)} | {
                key: _or_none(_median([row[key] for row in rows if row[key] is not None]))
                for key in ("real_s", "sim_s", "ratio")
            }
    return out


def replay_spread(runs: list[dict]) -> dict[str, float | None]:
    """Per percentile, how far the real replays of one trace part: for each later replay
    of a seed's trace, |its real TTFT / the first replay's - 1|, the median over them all
    (None where no trace was replayed twice). The same requests on the same machine: what
    one replay's percentile can tell, and so the floor of any error against it."""
    first = {r["seed"]: r for r in runs if r["replay"] == 0}
    later = [(first[r["seed"]], r) for r in runs if r["replay"] > 0]
    out: dict[str, float | None] = {}
    for q in PERCENTILES:
        key = f"ttft_p{q}_real_s"
        parts = [abs(r[key] / f[key] - 1) for f, r in later]
        out[f"ttft_p{q}_replay_spread"] = _or_none(_median(parts))
    return out


def pooled(real: list[np.ndarray], simulated: list[np.ndarray]) -> dict[str, float]:
    """Each percentile's real and simulated TTFT, the signed error and the rank error,
    over the requests of every repeat together (each side's arrays, one per repeat)."""
    real_all, simulated_all = np.concatenate(real), np.concatenate(simulated)
    return errors(real_all, simulated_all) | rank_errors(real_all, simulated_all)


def _by_tier(
    runs: list[dict], tiers: tuple[str, ...], count: str, median: str
) -> dict[str, dict[str, float | int | None]]:
    """Per tier, the repeats' `count`s summed and the median of their `median`s."""
    return {
        tier: {
            count: sum(run[tier][count] for run in runs),
            median: _or_none(_median([_nan(run[tier][median]) for run in runs])),
        }
        for tier in tiers
    }


def _nan(value: float | None) -> float:
    """None (nothing to take a median over) as NaN; a zero stays a zero."""
    return np.nan if value is None else value


def _or_none(value: float) -> float | None:
    """`value`, or None where there was nothing to take it over (JSON has no NaN)."""
    return value if np.isfinite(value) else None


def _median(values: list[float]) -> float:
    finite = [v for v in values if np.isfinite(v)]
    return float(np.median(finite)) if finite else float("nan")


def p99_ratios(policies: dict[str, dict]) -> dict[str, float]:
    """Random's p99 TTFT over startup-aware's, real and simulated: how much knowing where
    checkpoints are buys, and whether the simulator says the same (both policies run)."""
    if "random" not in policies or "startup-aware" not in policies:
        return {}
    random, aware = policies["random"], policies["startup-aware"]
    return {
        f"p99_ratio_random_to_startup_aware_{side}": random[f"ttft_p99_{side}_s"]
        / aware[f"ttft_p99_{side}_s"]
        for side in ("real", "sim")
    }
