"""Model columns as categoricals: one string per distinct model, an integer code per row."""

import numpy as np
import pandas as pd


def categorical(codes: np.ndarray, labels: list[str]) -> pd.Categorical:
    """Row i is labels[codes[i]]; equal labels merge into one category, unused ones drop."""
    categories, merged = np.unique(np.asarray(labels, dtype=object), return_inverse=True)
    return pd.Categorical.from_codes(merged[codes], categories).remove_unused_categories()
