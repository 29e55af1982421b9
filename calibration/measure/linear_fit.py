"""Least-squares lines through measured points: the cost models a profile carries.

Each line is the simulator's own cost model fitted to the points, so that the numbers
it runs on predict the measured times as well as its model can: a decode step is a
line in the batch size through the step measured at batch 1; a prefill is a rate, a
line through the origin; a migration round is a fixed cost plus that rate's time per
token. R² says how well the line describes the points.
"""

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Points:
    """Measured medians y at x: batch sizes, prompt lengths or tokens moved."""

    x: tuple[float, ...]
    y: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.x) != len(self.y) or not self.x:
            raise ValueError("points need as many y as x, and at least one")

    def pairs(self) -> list[tuple[float, float]]:
        return list(zip(self.x, self.y, strict=True))


@dataclass(frozen=True)
class Line:
    slope: float
    intercept: float
    r2: float

    def at(self, x: float) -> float:
        return self.intercept + self.slope * x

    def record(self) -> dict[str, float]:
        return {"slope": self.slope, "intercept": self.intercept, "r2": self.r2}


def fit_line(points: Points) -> Line:
    """The least-squares line through `points`; needs two distinct x."""
    x, y = _arrays(points)
    if len(set(points.x)) < 2:
        raise ValueError("a line needs points at two or more distinct x")
    slope, intercept = (float(v) for v in np.polyfit(x, y, 1))
    return Line(slope, intercept, _r2(x, y, slope, intercept))


def fit_through_origin(points: Points) -> Line:
    """The least-squares line y = slope * x; needs a point at a nonzero x."""
    return fit_through(points, 0.0, 0.0)


def fit_through(points: Points, x0: float, y0: float) -> Line:
    """The least-squares line through the fixed point (x0, y0); R² over all `points`."""
    x, y = _arrays(points)
    dx, dy = x - x0, y - y0
    if not np.any(dx):
        raise ValueError(f"a line through ({x0}, {y0}) needs a point at another x")
    slope = float(np.dot(dx, dy) / np.dot(dx, dx))
    intercept = y0 - slope * x0
    return Line(slope, intercept, _r2(x, y, slope, intercept))


def fit_intercept(points: Points, slope: float) -> Line:
    """The line of the given slope whose intercept fits `points` in relative terms
    (residuals weighted by 1/y², so a short time's error counts as much as a long one's)."""
    x, y = _arrays(points)
    weights = 1 / y**2
    intercept = float(np.sum(weights * (y - slope * x)) / np.sum(weights))
    return Line(slope, intercept, _r2(x, y, slope, intercept))


def _arrays(points: Points) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(points.x, dtype=float), np.asarray(points.y, dtype=float)


def _r2(x: np.ndarray, y: np.ndarray, slope: float, intercept: float) -> float:
    residual = float(np.sum((y - (intercept + slope * x)) ** 2))
    spread = float(np.sum((y - y.mean()) ** 2))
    return 1.0 - residual / spread if spread else 1.0
