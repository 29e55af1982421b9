"""A progress bar on stderr for long runs; silent when stderr is not a terminal."""

import sys
import time


class ProgressBar:
    def __init__(self, label: str, width: int = 30, unit: str = "requests") -> None:
        self._label = label
        self._unit = unit
        self._width = width
        self._first: tuple[int, float] | None = None  # the rate counts from the first call
        self._last_draw = 0.0

    def __call__(self, done: int, total: int) -> None:
        now = time.perf_counter()
        if self._first is None:
            self._first = (done, now)
        elif done < total and now - self._last_draw < 0.2:
            return
        self._last_draw = now
        filled = self._width * done // max(total, 1)
        line = (
            f"\r{self._label} [{'#' * filled}{'.' * (self._width - filled)}] "
            f"{done}/{total} {self._unit}"
        )
        since, then = self._first
        if done > since:
            rate = (done - since) / max(now - then, 1e-9)
            line += f", {rate:,.0f}/s" if rate >= 10 else f", {rate:.2f}/s"
        sys.stderr.write(line)
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()
