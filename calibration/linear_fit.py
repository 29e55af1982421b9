"""Least-squares lines through measured points: the cost models a profile carries.

Each line is the simulator's own cost model fitted to the points, so that the numbers
it runs on predict the measured times as well as its model can: a decode step against
batch size and a migration round against the tokens it moves are lines with a fixed
cost (the intercept) and a marginal one (the slope); a prefill is a rate, a line
through the origin. R² says how well the line describes the points.
"""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Line:
    slope: float
    intercept: float
    r2: float

    def at(self, x: float) -> float:
        return self.intercept + self.slope * x

    def record(self) -> dict[str, float]:
        return {"slope": self.slope, "intercept": self.intercept, "r2": self.r2}


def fit_line(xs: Sequence[float], ys: Sequence[float]) -> Line:
    """The least-squares line through (xs, ys); needs two distinct xs."""
    x, y = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    if len(x) != len(y) or len(set(x.tolist())) < 2:
        raise ValueError("a line needs points at two or more distinct x")
    slope, intercept = np.polyfit(x, y, 1)
    return Line(float(slope), float(intercept), _r2(x, y, slope, intercept))


def fit_through_origin(xs: Sequence[float], ys: Sequence[float]) -> Line:
    """The least-squares line y = slope * x through (xs, ys); needs one nonzero x."""
    x, y = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    if len(x) != len(y) or not np.any(x):
        raise ValueError("a line through the origin needs a point at a nonzero x")
    slope = float(np.dot(x, y) / np.dot(x, x))
    return Line(slope, 0.0, _r2(x, y, slope, 0.0))


def _r2(x: np.ndarray, y: np.ndarray, slope: float, intercept: float) -> float:
    residual = float(np.sum((y - (intercept + slope * x)) ** 2))
    spread = float(np.sum((y - y.mean()) ** 2))
    return 1.0 - residual / spread if spread else 1.0
