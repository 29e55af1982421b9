"""Give each request a model when the trace names none (the Azure LLM traces do not).

Model popularity in serverless platforms is heavily skewed (a few functions take most
invocations: Shahrad et al., ATC 2020), so the default is Zipf over the catalog in the
order it is written: p(rank k) is proportional to 1 / k^s.
"""

import numpy as np
import pandas as pd

from traces.labels import categorical


def zipf_weights(count: int, exponent: float) -> np.ndarray:
    """Probabilities of ranks 1..count under Zipf with `exponent` (0 gives uniform)."""
    weights = 1.0 / np.arange(1, count + 1, dtype=np.float64) ** exponent
    return weights / weights.sum()


def assign_models(
    rows: int, models: list[str], exponent: float, rng: np.random.Generator
) -> pd.Categorical:
    """A model name per row, drawn independently from the Zipf popularity."""
    picks = rng.choice(len(models), size=rows, p=zipf_weights(len(models), exponent))
    return categorical(picks, models)
