"""Refusing a profile whose numbers the hardware cannot have produced.

A profile's figures become published results, so a number faster than the device can
deliver is a bug in the measurement, never a finding. The usual culprit is a cache: a
"cold" read that the page cache (or a host cache behind a virtual disk) answered.
`check` compares figures measured in the same run against each other, never against
vendor numbers, so it holds on any machine.

Each figure the profile publishes, a median, is judged against the fastest round of
what bounds it. Noise on a shared machine (a neighbour's reads, a core taken away) only
ever slows a round, so the bound's fastest round is the closest to what the hardware
delivers; the raw device's is the fastest of every O_DIRECT read in the run, the
sweep's included. Median against median would refuse a sound disk whenever a few slow
raw rounds dragged the raw median under the loader's, and fastest against fastest
whenever one loader round found the disk quiet and no raw round did. A cache that
serves the loader serves its rounds alike and lifts the median past any read of the
disk; the guest's page cache cannot serve a single round, since each cold round starts
with the file evicted and checked (`calibration.measure.storage_probe`).
"""

from calibration.measure.measurement import Measurement
from calibration.measure.take_probe import TAKE
from thaw_kernel.errors import InputError

# A median this much faster than the fastest round of its bound, in the same run, moved
# bytes the hardware did not. The loader's cold median came to 0.54-0.88 of the fastest
# raw read in twelve `--quick` runs on the project's 2-core VM, six of them beside a
# bursty O_DIRECT reader of the same disk (`python -m calibration.measure --quick`).
CACHE_SUSPECT = 1.15
READERS_PREFIX = "disk_readers_"


class ImpossibleProfile(InputError):
    """The measurements contradict each other; no profile is written."""


def check(
    measurements: dict[str, Measurement], device: str, remote_rate: float | None = None
) -> None:
    """Raise `ImpossibleProfile` naming the first figure the device cannot have produced.

    Concurrent readers (`disk_readers_{k}`): k processes each loading like the loader,
    so their aggregate cannot pass k times the fastest raw read (for one reader, the
    loader's own bound). Downloads through the store (`remote_download`, with
    `remote_rate`) cannot pass the rate the store paces them to."""
    raw = max(
        _fastest(measurement)
        for name, measurement in measurements.items()
        if name.startswith("raw_cold")
    )
    loader = measurements["loader_cold"].median
    if loader > CACHE_SUSPECT * raw:
        raise ImpossibleProfile(
            f"loader_cold: {loader / 1e9:.2f} GB/s (median) is faster than any raw O_DIRECT "
            f"read of the same file ({raw / 1e9:.2f} GB/s at best): a cache answered, not "
            "the disk"
        )
    for name, measurement in sorted(measurements.items()):
        if not name.startswith(READERS_PREFIX):
            continue
        readers = int(name.removeprefix(READERS_PREFIX))
        if measurement.median > CACHE_SUSPECT * readers * raw:
            raise ImpossibleProfile(
                f"{name}: {measurement.median / 1e9:.2f} GB/s (median) from {readers} "
                f"reader(s) is faster than {readers} x the best raw O_DIRECT read "
                f"({raw / 1e9:.2f} GB/s): a cache answered, not the disk"
            )
    if remote_rate is not None:
        goodput = measurements["remote_download"].median
        if goodput > CACHE_SUSPECT * remote_rate:
            raise ImpossibleProfile(
                f"remote_download: {goodput / 1e6:.0f} MB/s (median) is faster than the "
                f"store's pacing ({remote_rate / 1e6:.0f} MB/s): the store did not pace"
            )
    if device == "cpu":
        memory = _fastest(measurements["dram_to_device_pageable_one_copy"])
        raw_median = measurements["raw_cold"].median
        if raw_median > CACHE_SUSPECT * memory:
            raise ImpossibleProfile(
                f"raw_cold: {raw_median / 1e9:.2f} GB/s (median) from disk is faster than "
                f"copying memory ({memory / 1e9:.2f} GB/s at best): the reads did not reach "
                "the disk"
            )
    else:
        link = max(
            _fastest(measurements[f"dram_to_device_pinned_{style}"])
            for style in ("one_copy", "per_tensor")
        )
        for name in ("loader_warm", TAKE):
            rate = measurements[name].median
            if rate > CACHE_SUSPECT * link:
                raise ImpossibleProfile(
                    f"{name}: {rate / 1e9:.2f} GB/s (median) onto the GPU is faster than its "
                    f"best pinned copy ({link / 1e9:.2f} GB/s): the load was not timed to its end"
                )


def _fastest(rates: Measurement) -> float:
    """The fastest round of a figure in bytes/s."""
    return max(rates.samples)
