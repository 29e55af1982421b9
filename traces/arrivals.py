"""Renewal arrival processes: Poisson (exponential gaps) and Gamma (gaps with a chosen CV).

Everything is generated in *operational time*, where the rate is 1, and mapped to real
time by the caller: a constant rate divides by it; a piecewise-constant rate (minute
counts) inverts its cumulative intensity. This is the time-rescaling construction of
inhomogeneous processes (Brown et al., Neural Computation 14(2), 2002), and it keeps
generation vectorised: one cumulative sum over gaps, no Python loop per arrival.
"""

import numpy as np


def gaps(rng: np.random.Generator, n: int, cv: float) -> np.ndarray:
    """`n` unit-mean gaps with coefficient of variation `cv` (1 is Poisson)."""
    if cv == 1.0:
        return rng.standard_exponential(n)
    shape = 1.0 / (cv * cv)
    return rng.gamma(shape, 1.0 / shape, n)


def unit_rate_points(rng: np.random.Generator, horizon: float, cv: float) -> np.ndarray:
    """The arrivals of a unit-rate renewal process in [0, horizon), starting at 0."""
    points = np.empty(0)
    start = 0.0
    while start < horizon:
        # Enough gaps to reach the horizon almost always (six standard deviations over).
        remaining = horizon - start
        n = int(remaining + 6.0 * cv * np.sqrt(remaining) + 16)
        batch = start + np.cumsum(gaps(rng, n, cv))
        points = np.concatenate([points, batch[batch < horizon]])
        start = batch[-1]
    return points


def constant_rate(
    rng: np.random.Generator,
    rate: float,
    cv: float,
    *,
    duration: float | None = None,
    count: int | None = None,
) -> np.ndarray:
    """Arrival times at `rate` per second: those within `duration`, or the first `count`."""
    if count is not None:
        return np.cumsum(gaps(rng, count, cv)) / rate
    return unit_rate_points(rng, rate * duration, cv) / rate
