"""Which model serves each function, when a function-invocation trace stands in for LLM
requests (as in ServerlessLLM's evaluation, which replays Azure Functions arrivals).

With F functions in file order and n models in catalog order (the first is the most
popular, as in `traces.popularity`):
- `stripe`: function i -> model i mod n (neighbouring functions on different models);
- `round-robin`: function i -> model n*i // F (contiguous blocks of functions per model);
- `popularity`: functions ranked by invocations, busiest first, then blocks as in
  `round-robin`: the busiest F/n functions feed the most popular model;
- `app`: each application its own model, the applications ranked by invocations,
  busiest first (Shahrad et al. keep an application's functions together: warm-up and
  memory are per application); the catalog needs a model per application.
"""

import numpy as np

MAPPINGS = ("stripe", "round-robin", "popularity", "app")
FUNCTION_APPS = "function_apps"  # a reader's note: each function's application, 0..A-1


def function_models(
    function: np.ndarray, functions: int, models: int, how: str, apps: np.ndarray | None = None
) -> np.ndarray:
    """The model index (into the catalog) of each request, from its function index (and
    for `app`, `apps`, each function's application)."""
    if how == "app":
        if apps is None:
            raise ValueError("this trace names no applications")
        return _ranked(apps[function])
    if how == "stripe":
        return function % models
    if how == "round-robin":
        return models * function // functions
    if how == "popularity":
        return models * _ranked(function, functions) // functions
    raise ValueError(f"unknown mapping {how!r}")


def _ranked(codes: np.ndarray, count: int | None = None) -> np.ndarray:
    """Each code's rank by how often it occurs, the most frequent 0 (ties in code order)."""
    busiest = np.argsort(-np.bincount(codes, minlength=count or 0), kind="stable")
    rank = np.empty(len(busiest), dtype=np.int64)
    rank[busiest] = np.arange(len(busiest))
    return rank[codes]
