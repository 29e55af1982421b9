"""`host_cores`: the effective cores whose fluid model best explains start-ups stretching.

The simulator runs a start-up's CPU-bound part as a flow of `cpu` CPU-seconds capped at
one core, sharing the host's cores with the other start-ups (one core each) and the
loads' CPU work (each load capped at the cores its bytes' pace takes) in proportion to
their caps (`sim.model.loading`). A start-up beside flows that leave it `rate`
cores takes `fixed + cpu / min(1, rate)`, where `fixed = alone - cpu` is the rest of a
start-up alone. The fit is the core count c from 1 up, in steps
of `STEP`, with the least squared error over the measured stretches: start-ups begun
together, and a start-up beside a load (a start-up that only ever met its own kind
would not say what a load costs it). Where the profile has the start-up's slowdown in
any company (`startup_company_slowdown` s, measured beside a download), every stretch
is priced as the simulator runs it, each start-up in company asking `1 / (1 + s)` of a
core, and the cores explain what remains: over-asked cores, where s changes nothing
among start-ups alone.

c need not be whole: on a virtual machine, or cores that share caches and memory
bandwidth (or SMT siblings), two start-ups slow each other before the cores run out,
and a whole count would call that no stretch at all. When nothing stretched, every c
at least the largest demand fits alike: the measurement bounds the cores only from
below, and the fit takes `most` (the cores the OS reports), or that demand if it is
more.
"""

import math
from dataclasses import dataclass

from sim.model.server import CORES, STARTUP_CPU, core_capacity, rates_in_company

STEP = 0.01


@dataclass(frozen=True)
class Stretch:
    """A start-up's median wall time, `wall_s`, beside `startups` other start-ups (one
    core each) and CPU flows capped at `beside` cores (a load's CPU work at its pace)."""

    wall_s: float
    beside: tuple[float, ...] = ()
    startups: int = 0


def at_once(k: int, wall_s: float) -> Stretch:
    """Each of `k` start-ups begun together took `wall_s`: each met k - 1 others."""
    return Stretch(wall_s, startups=k - 1)


def fit_host_cores(
    alone_s: float, cpu_s: float, stretches: list[Stretch], most: int, slowdown: float = 0.0
) -> float:
    """The fitted effective cores, from the start-up alone (wall and CPU seconds) and its
    median wall time beside other flows, given its `slowdown` in any company."""
    fixed = alone_s - cpu_s

    def error(cores: float) -> float:
        return sum((s.wall_s - fixed - cpu_s / _share(cores, s, slowdown)) ** 2 for s in stretches)

    top = max(1 + s.startups + sum(s.beside) for s in stretches)  # beyond it, no stretch
    grid = [round(1 + i * STEP, 2) for i in range(math.floor(round((top - 1) / STEP, 6)) + 1)]
    # Ties (no stretch beyond some c) go to the most cores, rounded so noise cannot split them.
    best = min(grid, key=lambda c: (round(error(c), 12), -c))
    return float(max(most, top)) if best == grid[-1] else best


def _share(cores: float, stretch: Stretch, slowdown: float) -> float:
    """The cores a start-up (capped at one) gets in the company of `stretch`, as the
    simulator's host cores share them."""
    flows = [(STARTUP_CPU, 1.0)] * (1 + stretch.startups)
    flows += [(CORES, cap) for cap in stretch.beside]
    return rates_in_company(slowdown, flows, core_capacity(cores))[0]
