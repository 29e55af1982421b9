"""`host_cores`: the core count whose fluid model best explains start-ups stretching.

The simulator runs a start-up's CPU-bound part as a flow of `cpu` CPU-seconds capped at
one core, so k start-ups at once on c cores each take `fixed + cpu * max(1, k / c)`,
where `fixed = alone - cpu` is the rest of a start-up alone. The fit is the c from 1 to
`most` with the least squared error over the measured concurrency levels. When no level
stretched, every c at least the largest level fits alike: the measurement bounds the
cores only from below, and the fit takes `most` (the cores the OS reports).
"""


def fit_host_cores(alone_s: float, cpu_s: float, at_once: dict[int, float], most: int) -> int:
    """The fitted cores, from the start-up alone (wall and CPU seconds) and its median
    wall time at each concurrency level."""
    fixed = alone_s - cpu_s

    def error(cores: int) -> float:
        return sum((t - fixed - cpu_s * max(1.0, k / cores)) ** 2 for k, t in at_once.items())

    most = max(most, *at_once)
    # Ties (no stretch beyond some c) go to the most cores, rounded so noise cannot split them.
    return min(range(1, most + 1), key=lambda c: (round(error(c), 12), -c))
