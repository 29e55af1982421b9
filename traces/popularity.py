"""Give each request a model when the trace names none (the Azure LLM traces do not).

Model popularity in serverless platforms is heavily skewed (a few functions take most
invocations: Shahrad et al., ATC 2020), so the default is Zipf over the catalog in the
order it is written: p(rank k) is proportional to 1 / k^s.
"""

import numpy as np
import pandas as pd

from traces.labels import categorical, code_dtype

CHUNK = 1 << 20  # draws per step


def zipf_weights(count: int, exponent: float) -> np.ndarray:
    """Probabilities of ranks 1..count under Zipf with `exponent` (0 gives uniform)."""
    weights = 1.0 / np.arange(1, count + 1, dtype=np.float64) ** exponent
    return weights / weights.sum()


def assign_models(
    rows: int, models: list[str], exponent: float, rng: np.random.Generator
) -> pd.Categorical:
    """A model name per row, drawn independently from the Zipf popularity.

    The draws are exactly `rng.choice(len(models), rows, p=weights)` (numpy's inverse-CDF
    method), made a million at a time into small integer codes, so that a 27-million-row
    trace does not need two 8-byte temporaries per row."""
    cdf = zipf_weights(len(models), exponent).cumsum()
    cdf /= cdf[-1]
    picks = np.empty(rows, dtype=code_dtype(len(models)))
    for start in range(0, rows, CHUNK):
        stop = min(start + CHUNK, rows)
        picks[start:stop] = cdf.searchsorted(rng.random(stop - start), side="right")
    return categorical(picks, models)
