"""Per-model books made on first use, so a catalog's size costs nothing up front.

A hub may list 100,000 models of which a run touches a few thousand; building each
model's index, holder sets and start-up steps at the start cost seconds and hundreds of
megabytes before the first request. A `PerModel` table builds a model's entry the first
time it is asked for it, from the model's name, and keeps it; it is never iterated, so
the order in which entries were made cannot leak into a result.
"""

from collections.abc import Callable
from typing import TypeVar

V = TypeVar("V")


class PerModel(dict[str, V]):
    """A dict from model name to `make(name)`, filled as names are first looked up."""

    def __init__(self, make: Callable[[str], V]) -> None:
        super().__init__()
        self._make = make

    def __missing__(self, model: str) -> V:
        value = self[model] = self._make(model)
        return value
