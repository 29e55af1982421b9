"""Token lengths for traces that carry none (function invocations, synthetic arrivals).

A spec string says where they come from:
- `trace` (default): (input, output) pairs drawn with replacement from the bundled Azure
  LLM 2023 code trace, so the correlation between prompt and answer lengths is kept;
- `trace:PATH`: the same from any trace thaw reads that has token counts;
- `lognormal:IN_MEAN,IN_CV,OUT_MEAN,OUT_CV`: independent lognormals with those means and
  coefficients of variation, rounded to integers >= 1;
- `fixed:IN,OUT`: every request the same.
"""

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from thaw_kernel import bounds
from thaw_kernel.user_files import check_regular_file
from traces.errors import TraceError


def _numbers(spec: str, body: str, count: int) -> list[float]:
    """The spec's numbers: token counts (means) up to `bounds.TOKENS`, CVs to `bounds.CV`."""
    try:
        values = [float(v) for v in body.split(",")]
    except ValueError:
        values = []
    highs = [bounds.TOKENS, bounds.CV] * (count // 2) if count == 4 else [bounds.TOKENS] * 2
    if len(values) != count or not all(0 < v <= h for v, h in zip(values, highs, strict=True)):
        raise TraceError(
            f"--tokens {spec!r}: expected {count} positive numbers after the colon (token "
            f"counts up to {bounds.TOKENS}, CVs up to {bounds.CV:g})"
        )
    return values


def check_spec(spec: str) -> None:
    """Refuse a malformed spec, or a trace:PATH that is not a file, before any file is
    read (a trace with token counts never reads PATH: a typo must not pass unseen)."""
    kind, _, body = spec.partition(":")
    if kind == "lognormal":
        _numbers(spec, body, 4)
    elif kind == "fixed":
        _numbers(spec, body, 2)
    elif kind == "trace" and body:
        check_regular_file(Path(body), TraceError)
    elif kind != "trace":
        raise TraceError(
            f"--tokens {spec!r}: expected trace, trace:PATH, lognormal:IN_MEAN,IN_CV,OUT_MEAN,"
            "OUT_CV or fixed:IN,OUT"
        )


def _lognormal(rng: np.random.Generator, n: int, mean: float, cv: float) -> np.ndarray:
    sigma2 = np.log1p(cv * cv)
    draws = rng.lognormal(np.log(mean) - sigma2 / 2, np.sqrt(sigma2), n)
    return np.maximum(np.rint(draws), 1).astype(np.int64)


def draw_tokens(
    spec: str,
    n: int,
    rng: np.random.Generator,
    reference: Callable[[Path | None], pd.DataFrame],
) -> tuple[np.ndarray, np.ndarray]:
    """(input_tokens, output_tokens) for `n` requests; `reference(path)` reads a trace's
    token columns (None: the bundled trace)."""
    check_spec(spec)
    kind, _, body = spec.partition(":")
    if kind == "fixed":
        i, o = _numbers(spec, body, 2)
        return np.full(n, max(round(i), 1), np.int64), np.full(n, max(round(o), 1), np.int64)
    if kind == "lognormal":
        im, icv, om, ocv = _numbers(spec, body, 4)
        return _lognormal(rng, n, im, icv), _lognormal(rng, n, om, ocv)
    source = reference(Path(body) if body else None)
    pick = rng.integers(0, len(source), n)
    return (
        source["input_tokens"].to_numpy(np.int64)[pick],
        source["output_tokens"].to_numpy(np.int64)[pick],
    )
