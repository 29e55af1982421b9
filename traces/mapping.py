"""Which model serves each function, when a function-invocation trace stands in for LLM
requests (as in ServerlessLLM's evaluation, which replays Azure Functions arrivals).

With F functions in file order and n models in catalog order (the first is the most
popular, as in `traces.popularity`):
- `stripe`: function i -> model i mod n (neighbouring functions on different models);
- `round-robin`: function i -> model n*i // F (contiguous blocks of functions per model);
- `popularity`: functions ranked by invocations, busiest first, then blocks as in
  `round-robin`: the busiest F/n functions feed the most popular model.
"""

import numpy as np

MAPPINGS = ("stripe", "round-robin", "popularity")


def function_models(function: np.ndarray, functions: int, models: int, how: str) -> np.ndarray:
    """The model index (into the catalog) of each request, from its function index."""
    if how == "stripe":
        return function % models
    if how == "round-robin":
        return models * function // functions
    if how == "popularity":
        busiest = np.argsort(-np.bincount(function, minlength=functions), kind="stable")
        rank = np.empty(functions, dtype=np.int64)
        rank[busiest] = np.arange(functions)
        return models * rank[function] // functions
    raise ValueError(f"unknown mapping {how!r}")
