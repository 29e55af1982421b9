"""A progress bar on stderr for long runs; silent when stderr is not a terminal."""

import sys
import time


class ProgressBar:
    def __init__(self, label: str, width: int = 30) -> None:
        self._label = label
        self._width = width
        self._started = time.perf_counter()
        self._last_draw = 0.0

    def __call__(self, done: int, total: int) -> None:
        now = time.perf_counter()
        if done < total and now - self._last_draw < 0.2:
            return
        self._last_draw = now
        filled = self._width * done // max(total, 1)
        rate = done / max(now - self._started, 1e-9)
        sys.stderr.write(
            f"\r{self._label} [{'#' * filled}{'.' * (self._width - filled)}] "
            f"{done}/{total} requests, {rate:,.0f}/s"
        )
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()
