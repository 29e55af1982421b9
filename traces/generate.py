"""Synthetic workloads: renewal arrivals at a target rate, Zipf model popularity over the
catalog, token lengths from a reference trace or a distribution (`traces.tokens`).

Poisson arrivals (CV 1) are the memoryless baseline; Gamma gaps with CV > 1 give the
bursts that make cold starts (production serverless arrivals are bursty: Shahrad et al.,
ATC 2020), CV < 1 a steadier stream. Every draw comes from the generator passed in.
"""

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from traces.arrivals import constant_rate
from traces.popularity import assign_models
from traces.tokens import draw_tokens


def synthesize(
    rng: np.random.Generator,
    models: list[str],
    *,
    rate: float,
    cv: float = 1.0,
    duration: float | None = None,
    count: int | None = None,
    zipf_exponent: float = 1.0,
    tokens: str = "trace",
    reference: Callable[[Path | None], pd.DataFrame],
) -> pd.DataFrame:
    """A canonical trace: arrivals within `duration` seconds, or `count` of them."""
    arrival = constant_rate(rng, rate, cv, duration=duration, count=count)
    model = assign_models(len(arrival), models, zipf_exponent, rng)
    inputs, outputs = draw_tokens(tokens, len(arrival), rng, reference)
    return pd.DataFrame(
        {"arrival_s": arrival, "model": model, "input_tokens": inputs, "output_tokens": outputs}
    )
