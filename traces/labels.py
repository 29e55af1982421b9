"""Model columns as categoricals: one string per distinct model, a small integer per row."""

import numpy as np
import pandas as pd


def code_dtype(count: int) -> np.dtype:
    """The smallest signed integer type that holds codes 0..count-1 (pandas' own rule)."""
    return np.min_scalar_type(-max(count, 1))


def categorical(codes: np.ndarray, labels: list[str]) -> pd.Categorical:
    """Row i is labels[codes[i]]; equal labels merge into one category."""
    names = np.asarray(labels, dtype=object)
    categories, merged = np.unique(names, return_inverse=True)
    if len(categories) == len(names):  # distinct labels: the codes stand as they are
        categories, merged = names, np.arange(len(names))
    small = merged.astype(code_dtype(len(categories)))[codes]
    return pd.Categorical.from_codes(small, categories, validate=False)
