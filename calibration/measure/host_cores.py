"""`host_cores`: the effective cores whose fluid model best explains start-ups stretching.

The simulator runs a start-up's CPU-bound part as a flow of `cpu` CPU-seconds capped at
one core, so k start-ups at once on c cores each take `fixed + cpu * max(1, k / c)`,
where `fixed = alone - cpu` is the rest of a start-up alone. The fit is the c from 1 up,
in steps of `STEP`, with the least squared error over the measured concurrency levels.
It need not be whole: on a virtual machine, or cores that share caches and memory
bandwidth (or SMT siblings), two start-ups slow each other before the cores run out,
and a whole count would call that no stretch at all. When no level stretched, every c
at least the largest level fits alike: the measurement bounds the cores only from
below, and the fit takes `most` (the cores the OS reports), or the largest level if
that is more.
"""

STEP = 0.01


def fit_host_cores(alone_s: float, cpu_s: float, at_once: dict[int, float], most: int) -> float:
    """The fitted effective cores, from the start-up alone (wall and CPU seconds) and its
    median wall time at each concurrency level."""
    fixed = alone_s - cpu_s

    def error(cores: float) -> float:
        return sum((t - fixed - cpu_s * max(1.0, k / cores)) ** 2 for k, t in at_once.items())

    top = max(at_once)
    grid = [round(1 + i * STEP, 2) for i in range(round((top - 1) / STEP) + 1)]
    # Ties (no stretch beyond some c) go to the most cores, rounded so noise cannot split them.
    best = min(grid, key=lambda c: (round(error(c), 12), -c))
    return float(max(most, top)) if best == top else best
