"""Statistics over seeds: bootstrap confidence intervals, SLO attainment, cost.

Seeds are the independent replications of a setting (each redraws the trace's models and
the policy's choices), so intervals resample seeds, never requests: a tail percentile of
one run is one number, and its spread across seeds is the uncertainty a reader needs.
With few seeds the percentile bootstrap is narrow and under-covers; the tables always
show how many seeds stand behind each interval, and one seed gives no interval at all.
"""

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from analysis.runs import SETTING

LEVEL = 0.95
RESAMPLES = 2000


def bootstrap_ci(
    values: Sequence[float],
    statistic: Callable[..., np.ndarray] = np.mean,
    *,
    level: float = LEVEL,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> tuple[float, float, float]:
    """(estimate, low, high): `statistic` of `values` and its percentile-bootstrap interval.

    `statistic` takes an `axis` keyword, like np.mean and np.median. Seeded, so a report is
    reproducible to the digit. NaN bounds for fewer than two values.
    """
    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    if len(x) == 0:
        return (np.nan, np.nan, np.nan)
    estimate = float(statistic(x))
    if len(x) < 2:
        return (estimate, np.nan, np.nan)
    if np.all(x == x[0]):  # every resample is the same: no spread (and no degenerate warning)
        return (estimate, estimate, estimate)
    interval = stats.bootstrap(
        (x,),
        statistic,
        n_resamples=resamples,
        confidence_level=level,
        method="percentile",
        rng=np.random.default_rng(seed),
    ).confidence_interval
    return (estimate, float(interval.low), float(interval.high))


def over_seeds(
    table: pd.DataFrame, metric: str, by: Sequence[str] = SETTING, seed: int = 0
) -> pd.DataFrame:
    """Per setting: seeds, the mean of `metric` over seeds and its bootstrap 95% interval."""
    rows = []
    for key, group in table.groupby(list(by), sort=False):
        estimate, low, high = bootstrap_ci(group[metric].to_numpy(), seed=seed)
        rows.append(
            {
                **dict(zip(by, key, strict=True)),
                "seeds": group[metric].notna().sum(),
                "mean": estimate,
                "low": low,
                "high": high,
            }
        )
    return pd.DataFrame(rows)


def slo_attainment(requests: pd.DataFrame, threshold_s: float) -> pd.DataFrame:
    """Per run: the share of requests that finished with a TTFT within `threshold_s`.
    Requests that did not finish count as misses. A frame without a `keep_alive` column
    (made before keep-alive was a coordinate) is one keep-alive's."""
    met = (requests["status"] == "done") & (requests["ttft_s"] <= threshold_s)
    keys = [key for key in (*SETTING, "seed") if key != "keep_alive" or key in requests]
    return (
        requests.assign(met=met)
        .groupby(keys, sort=False, observed=True)["met"]
        .mean()
        .rename("slo_attainment")
        .reset_index()
    )


def cost(table: pd.DataFrame) -> pd.Series:
    """GPU-seconds per completed request, per run: what a serverless bill is made of."""
    return table["gpu_seconds"] / table["completed"].where(table["completed"] > 0)
