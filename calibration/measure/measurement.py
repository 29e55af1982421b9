"""One raw measurement of a calibration run: repeated samples of a figure, and their spread.

The profile keeps each as n, median, min and max with its unit, and whether the page
cache could have served it, so that a reader can judge a derived number by the raw
figures behind it (sim/config/profile.py's `measurements`).
"""

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Measurement:
    samples: tuple[float, ...]
    unit: str
    page_cache_possible: bool

    def __post_init__(self) -> None:
        if not self.samples:
            raise ValueError("a measurement needs at least one sample")

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    def record(self) -> dict[str, object]:
        """The profile's form of it."""
        return {
            "n": len(self.samples),
            "median": self.median,
            "min": min(self.samples),
            "max": max(self.samples),
            "unit": self.unit,
            "page_cache_possible": self.page_cache_possible,
        }


def seconds(action: Callable[[], object]) -> float:
    """Wall-clock seconds `action` takes."""
    started = time.perf_counter()
    action()
    return time.perf_counter() - started
