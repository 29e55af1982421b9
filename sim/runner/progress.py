"""A progress bar on stderr for long runs (tqdm: count, rate and time left). Callers make
one only when stderr is a terminal, so piped and logged output stays clean."""

import sys

from tqdm import tqdm


class ProgressBar:
    """Called as `bar(done, total)` by the simulator or a sweep as work completes."""

    def __init__(self, label: str, unit: str = "requests") -> None:
        self._label = label
        self._unit = unit
        self._bar: tqdm | None = None

    def __call__(self, done: int, total: int) -> None:
        if self._bar is None:
            self._bar = tqdm(
                total=total, desc=self._label, unit=f" {self._unit}", file=sys.stderr,
                mininterval=0.2, dynamic_ncols=True, leave=True,
            )  # fmt: skip
        self._bar.update(done - self._bar.n)
        if done >= total:
            self._bar.close()
