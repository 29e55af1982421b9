"""Parse sizes ("512GiB") and bandwidths ("10Gb/s") into bytes and bytes per second.

Storage people write decimal units (GB = 1e9), memory people binary ones (GiB = 2**30),
and network people bits ("Gb/s"); a configuration mixes all three, so each is explicit.
"""

import math
import re

_PREFIX = {
    "": 1,
    "K": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
}
_QUANTITY = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([KMGTP]i?)?([Bb])?\s*$")


def _split(text: str) -> tuple[float, int, str]:
    match = _QUANTITY.match(text)
    if not match:
        raise ValueError(f"cannot parse {text!r}")
    number, prefix, unit = match.groups()
    return float(number), _PREFIX[prefix or ""], unit or ""


def parse_size(value: int | float | str) -> int:
    """Bytes from a number or a string such as "13.4GB", "512GiB", "2TB"."""
    if isinstance(value, bool):
        raise ValueError(f"expected a size, got {value!r}")
    if isinstance(value, int):
        return value
    if not isinstance(value, float | str):
        raise ValueError(f"expected a size, got {value!r}")
    if isinstance(value, float):
        number, scale = value, 1
    else:
        number, scale, unit = _split(value)
        if unit == "b":
            raise ValueError(f"{value!r} is in bits; a size is in bytes (B)")
    if not math.isfinite(number * scale):
        raise ValueError(f"expected a finite size, got {value!r}")
    return round(number * scale)


def parse_bandwidth(value: int | float | str) -> float:
    """Bytes per second from a number or a string such as "6GB/s" or "10Gb/s" (bits)."""
    if isinstance(value, bool):
        raise ValueError(f"expected a bandwidth, got {value!r}")
    if isinstance(value, int | float):
        return float(value)
    if not isinstance(value, str):
        raise ValueError(f"expected a bandwidth, got {value!r}")
    text = value.strip()
    if not text.endswith("/s"):
        if re.search(r"[A-Za-z]", text):
            raise ValueError(f"{value!r} is not a bandwidth (write e.g. '6GB/s' or '10Gb/s')")
        return float(text)
    number, scale, unit = _split(text[:-2])
    if unit == "":
        raise ValueError(f"{value!r} needs B (bytes) or b (bits) before /s")
    bits = unit == "b"
    return number * scale / (8 if bits else 1)
