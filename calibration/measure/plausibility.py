"""Refusing a profile whose numbers the hardware cannot have produced.

A profile's figures become published results, so a number faster than the device can
deliver is a bug in the measurement, never a finding. The usual culprit is a cache: a
"cold" read that the page cache (or a host cache behind a virtual disk) answered.
`check` compares figures measured in the same run against each other, never against
vendor numbers, so it holds on any machine.
"""

from calibration.measure.measurement import Measurement
from sim.common.errors import InputError

# A cold loader this much faster than the raw O_DIRECT read of the same file, measured
# in the same run, read bytes the device did not deliver (the runs' noise here is ~10%).
CACHE_SUSPECT = 1.15


class ImpossibleProfile(InputError):
    """The measurements contradict each other; no profile is written."""


def check(measurements: dict[str, Measurement], device: str) -> None:
    """Raise `ImpossibleProfile` naming the first figure the device cannot have produced."""
    raw = measurements["raw_cold"].median
    loader = measurements["loader_cold"].median
    if loader > CACHE_SUSPECT * raw:
        raise ImpossibleProfile(
            f"loader_cold: {loader / 1e9:.2f} GB/s is faster than the raw O_DIRECT read of "
            f"the same file ({raw / 1e9:.2f} GB/s): a cache answered, not the disk"
        )
    if device == "cpu":
        memory = measurements["dram_to_device_pageable_one_copy"].median
        if raw > CACHE_SUSPECT * memory:
            raise ImpossibleProfile(
                f"raw_cold: {raw / 1e9:.2f} GB/s from disk is faster than copying memory "
                f"({memory / 1e9:.2f} GB/s): the reads did not reach the disk"
            )
    else:
        link = max(
            measurements[f"dram_to_device_pinned_{style}"].median
            for style in ("one_copy", "per_tensor")
        )
        warm = measurements["loader_warm"].median
        if warm > CACHE_SUSPECT * link:
            raise ImpossibleProfile(
                f"loader_warm: {warm / 1e9:.2f} GB/s onto the GPU is faster than its best "
                f"pinned copy ({link / 1e9:.2f} GB/s): the load was not timed to its end"
            )
