"""The value parsers of the cluster file: each takes a raw TOML value and returns the
normalised one or raises ValueError saying what was expected; `parse_fields` applies a
table of them and names the key in the error. Bounds come from `thaw_kernel.bounds`."""

from collections.abc import Callable
from typing import Any

from thaw_kernel import bounds
from thaw_kernel.errors import InputError
from thaw_kernel.units import parse_bandwidth, parse_size


def integer(value: Any, minimum: int, maximum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        wanted = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise ValueError(f"expected {wanted}, got {value!r}")
    if value > maximum:
        raise ValueError(f"expected at most {maximum} (thaw_kernel/bounds.py), got {value!r}")
    return value


def integers(maximum: int, minimum: int = 1) -> Callable[[Any], int]:
    return lambda value: integer(value, minimum, maximum)


def number(value: Any, *, positive: bool, low: float = 0.0, high: float = bounds.SECONDS) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"expected a number, got {value!r}")
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"expected a finite number, got {value!r}")
    if value < 0 or (positive and value == 0):
        raise ValueError(f"expected a {'positive' if positive else 'non-negative'} number")
    if value > high or (value and value < low):
        raise ValueError(
            f"expected a number from {low:g} to {high:g}{' or 0' * (not positive and low > 0)} "
            f"(thaw_kernel/bounds.py), got {value!r}"
        )
    return float(value)


def positive(value: Any) -> float:
    """A duration in seconds that must not be zero."""
    return number(value, positive=True, low=bounds.SECONDS_MIN)


def non_negative(value: Any) -> float:
    """A duration in seconds."""
    return number(value, positive=False)


def ranged(low: float, high: float, *, positive: bool = True) -> Callable[[Any], float]:
    return lambda value: number(value, positive=positive, low=low, high=high)


def size(value: Any) -> int:
    size = parse_size(value)
    if size <= 0:
        raise ValueError(f"expected a positive size, got {value!r}")
    if size > bounds.BYTES:
        raise ValueError(f"expected at most {bounds.BYTES} bytes (thaw_kernel/bounds.py)")
    return size


def bandwidth(value: Any) -> float:
    bandwidth = parse_bandwidth(value)
    if not bandwidth > 0 or bandwidth == float("inf"):
        raise ValueError(f"expected a positive bandwidth, got {value!r}")
    if not bounds.BANDWIDTH_MIN <= bandwidth <= bounds.BANDWIDTH_MAX:
        raise ValueError(
            f"expected a bandwidth from {bounds.BANDWIDTH_MIN:g} to {bounds.BANDWIDTH_MAX:g} "
            f"bytes/s (thaw_kernel/bounds.py), got {value!r}"
        )
    return bandwidth


def identifier(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"expected a non-empty string, got {value!r}")
    return value


def server_indices(value: Any) -> list[int]:
    if not isinstance(value, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value
    ):
        raise ValueError(f"expected a list of server indices (integers >= 0), got {value!r}")
    return sorted(set(value))


def flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {value!r}")
    return value


Parser = Callable[[Any], Any]


def sub_table(value: Any, key: str) -> dict:
    if not isinstance(value, dict):
        raise InputError(f"{key}: expected a table, got {value!r}")
    return value


def parse_fields(raw: dict, fields: dict[str, Parser], where: str) -> dict[str, Any]:
    """Check for unknown and missing keys, then parse every field; errors name the key."""
    for key in raw:
        if key not in fields:
            raise InputError(f"{where}{key}: unknown key (expected one of {', '.join(fields)})")
    parsed = {}
    for key, parse in fields.items():
        if key not in raw:
            raise InputError(f"{where}{key}: missing")
        try:
            parsed[key] = parse(raw[key])
        except ValueError as err:
            raise InputError(f"{where}{key}: {err}") from None
    return parsed
