"""Place each minute's invocation count in time (Azure Functions 2019 counts per minute).

- `uniform` (default): each minute's n invocations at independent uniform times in the
  minute. Keeps every minute's count exactly; within a minute, arrivals are Poisson-like.
- `even`: n invocations evenly spaced, at (k + 1/2) * 60/n. Keeps every count.
- `poisson`: an inhomogeneous Poisson process whose rate in each minute is n/60, so a
  minute's count is Poisson(n): counts are kept only on average.
- `gamma`: as `poisson` but a renewal process with gaps of coefficient of variation
  `cv` (burstier than Poisson for cv > 1), in operational time (see `traces.arrivals`).

Cells are (function, minute) pairs, function-major. For `poisson` and `gamma` one renewal
process runs through the cells one after another, each cell's operational length being
its count: a gap that straddles two cells starts the next one at a residual gap, as an
arbitrary start of a running renewal process would.
"""

import numpy as np

from traces.arrivals import unit_rate_points

PLACEMENTS = ("uniform", "even", "poisson", "gamma")
MINUTE_S = 60.0


def place(
    counts: np.ndarray, starts: np.ndarray, how: str, cv: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """(row of each invocation, its time in seconds), for `counts[row, minute]` invocations
    in minutes that start at `starts[minute]` seconds. Sorted by time."""
    minutes = counts.shape[1]
    flat = counts.ravel().astype(np.int64)
    if how in ("uniform", "even"):
        cell = np.repeat(np.arange(flat.size), flat)
        if how == "uniform":
            offset = rng.random(cell.size)
        else:
            first = np.repeat(np.cumsum(flat) - flat, flat)
            offset = (np.arange(cell.size) - first + 0.5) / flat[cell]
    elif how in ("poisson", "gamma"):
        edges = np.cumsum(flat)
        points = unit_rate_points(
            rng, float(edges[-1]) if edges.size else 0.0, 1.0 if how == "poisson" else cv
        )
        cell = np.searchsorted(edges, points, side="right")
        offset = (points - (edges[cell] - flat[cell])) / flat[cell]
    else:
        raise ValueError(f"unknown placement {how!r}")
    times = starts[cell % minutes] + offset * MINUTE_S
    order = np.argsort(times, kind="stable")
    return cell[order] // minutes, times[order]
