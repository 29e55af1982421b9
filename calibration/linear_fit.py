"""Least-squares lines through measured points: the cost models a profile carries.

Decode step time against batch size, prefill time against prompt length and a migration
round's time against the tokens it moves are each close to a line on every machine we
measured; the fit's intercept is the fixed cost, its slope the marginal one, and R²
says how well a line describes the points.
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
    residual = float(np.sum((y - (intercept + slope * x)) ** 2))
    spread = float(np.sum((y - y.mean()) ** 2))
    return Line(float(slope), float(intercept), 1.0 - residual / spread if spread else 1.0)
