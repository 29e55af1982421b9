"""`histogram[:key=value,...]`: the hybrid histogram policy of Shahrad et al., "Serverless
in the Wild: Characterizing and Optimizing the Serverless Workload at a Large Cloud
Provider" (USENIX ATC '20, section 4).

Per model it keeps a histogram of idle times: from the moment one of its instances goes
idle to the next request that wakes an idle instance of it or starts one. When an
instance goes idle, the histogram's head (5th percentile) and tail (99th percentile) of
the idle times in range give two windows, widened by a 10% margin:

- pre-warm window = head x (1 - margin): if it is not zero, the instance stops at once
  and a fresh one starts that long after (the request is expected no earlier), to stay
  warm until tail x (1 + margin) from the idle moment;
- otherwise the instance simply stays warm for tail x (1 + margin).

When the pattern is uncertain, the policy keeps the instance for a conservative fixed
`fallback_s` instead (no pre-warm): fewer than `min_samples` idle times, more than
`oob_max` of them beyond the histogram's range (the paper forecasts those with ARIMA;
here they fall back), or a histogram too flat to be a pattern: the coefficient of
variation of its bin counts below `cv_min`.

Parameters (`histogram:key=value,...`): from the paper, `bin_s` = 60 (1-minute bins),
`range_s` = 14400 (4 hours), `head` = 5, `tail` = 99 (percentiles), `margin` = 0.1;
thaw's choices where the paper gives no number here: `min_samples` = 10, `cv_min` = 2,
`oob_max` = 0.5, and `fallback_s` = 14400 (the histogram's range).
"""

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from sim.keep_alive.base import Idle, KeepAlive, register
from sim.keep_alive.params import key_values
from thaw_kernel import bounds

if TYPE_CHECKING:
    from sim.model.instance import Instance

# key -> (default, lowest, highest)
PARAMS = {
    "bin_s": (60.0, 1e-3, bounds.SECONDS),
    "range_s": (14400.0, 1e-3, bounds.SECONDS),
    "head": (5.0, 0.0, 100.0),
    "tail": (99.0, 0.0, 100.0),
    "margin": (0.1, 0.0, 1.0),
    "min_samples": (10.0, 1.0, 1e9),
    "cv_min": (2.0, 0.0, 1e9),
    "oob_max": (0.5, 0.0, 1.0),
    "fallback_s": (14400.0, 0.0, bounds.SECONDS),
}
MAX_BINS = 1_000_000  # range_s / bin_s: one model's histogram stays a few MB at most


@register("histogram")
class Histogram(KeepAlive):
    @classmethod
    def parse(cls, params: str) -> dict[str, float]:
        p = key_values(params, PARAMS)
        if p["head"] > p["tail"]:
            raise ValueError(f"head ({p['head']:g}) must not exceed tail ({p['tail']:g})")
        bins = math.ceil(p["range_s"] / p["bin_s"])
        if bins > MAX_BINS:
            raise ValueError(f"range_s / bin_s: at most {MAX_BINS} bins, got {bins}")
        if p["min_samples"] != int(p["min_samples"]):
            raise ValueError(f"min_samples: expected an integer, got {p['min_samples']:g}")
        return p

    def __init__(self, values: Mapping[str, float], keep_alive_s: float) -> None:
        p = dict(values)
        self._p = p
        self._bins = math.ceil(p["range_s"] / p["bin_s"])
        self._counts: dict[str, np.ndarray] = {}  # per model, idle times per bin
        self._out: dict[str, int] = {}  # per model, idle times beyond the range
        self._idle_since: dict[str, float] = {}
        self._windows: dict[str, tuple[float, float]] = {}  # cached (pre-warm, keep until)
        self._keep_prewarmed: dict[str, float] = {}  # per model, for its pre-warmed instance

    def demand(self, model: str, now: float) -> None:
        since = self._idle_since.pop(model, None)
        if since is None:
            return
        b = int((now - since) // self._p["bin_s"])
        if b < self._bins:
            counts = self._counts.get(model)
            if counts is None:
                counts = self._counts[model] = np.zeros(self._bins, dtype=np.int64)
            counts[b] += 1
        else:
            self._out[model] = self._out.get(model, 0) + 1
        self._windows.pop(model, None)

    def windows(self, model: str) -> tuple[float, float]:
        """(pre-warm window, keep-alive until), both from the idle moment; (0, fallback_s)
        when the pattern is uncertain."""
        cached = self._windows.get(model)
        if cached is None:
            cached = self._windows[model] = self._compute(model)
        return cached

    def _compute(self, model: str) -> tuple[float, float]:
        p = self._p
        counts = self._counts.get(model)
        inside = 0 if counts is None else int(counts.sum())
        out = self._out.get(model, 0)
        total = inside + out
        if total < p["min_samples"] or out > p["oob_max"] * total or inside == 0:
            return 0.0, p["fallback_s"]
        if counts.std() < p["cv_min"] * counts.mean():
            return 0.0, p["fallback_s"]
        cumulative = np.cumsum(counts)
        head = int(np.searchsorted(cumulative, p["head"] / 100 * inside))
        tail = int(np.searchsorted(cumulative, p["tail"] / 100 * inside))
        prewarm = head * p["bin_s"] * (1 - p["margin"])
        return prewarm, (tail + 1) * p["bin_s"] * (1 + p["margin"])

    def idle(self, instance: "Instance", now: float) -> Idle:
        model = instance.model.name
        if instance.prewarmed:  # ready, and no request yet: warm for the rest of its window
            return Idle(self._keep_prewarmed.pop(model, self._p["fallback_s"]))
        self._idle_since[model] = now
        prewarm, until = self.windows(model)
        if prewarm <= 0:
            return Idle(until)
        self._keep_prewarmed[model] = until - prewarm
        return Idle(0.0, prewarm)
