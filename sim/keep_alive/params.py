"""`key=value,...` parameters of a keep-alive policy, each checked against its range."""

import math
from collections.abc import Mapping


def number(text: str, key: str, low: float, high: float) -> float:
    """A finite number in [low, high]; ValueError names `key`."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and low <= value <= high):
        raise ValueError(f"{key}: expected a number from {low:g} to {high:g}, got {text!r}")
    return value


def key_values(params: str, known: Mapping[str, tuple[float, float, float]]) -> dict[str, float]:
    """`params` (`key=value,...`, possibly empty) over the defaults of `known` (key ->
    (default, low, high)); ValueError names an unknown key or a bad value."""
    values = {key: default for key, (default, _, _) in known.items()}
    for pair in params.split(",") if params else []:
        key, sep, text = pair.partition("=")
        if not sep:
            raise ValueError(f"expected key=value, got {pair!r}")
        if key not in known:
            raise ValueError(f"unknown parameter {key!r} (known: {', '.join(known)})")
        _, low, high = known[key]
        values[key] = number(text, key, low, high)
    return values
