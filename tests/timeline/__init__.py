"""Each request's timeline rebuilt from records the simulator keeps apart, and checked.

The request table splits a TTFT into queue, start-up and prefill; the instance log says,
separately, when each instance was given its GPUs, how long its checkpoint load (and the
download part of it) took and from which tier, when it was ready, when it fell asleep, was
woken and ended. Joined on the instance a request was placed on, the two must tell one
story, and every start-up must take at least what the hardware allows: its steps one after
another, each as long as its slowest stage (a fixed stage its seconds, a CPU stage its
CPU-seconds on at most one core, the load its bytes over the slowest link of each phase),
exactly that where nothing shared a resource with it. Every expected value here comes from
the log and the configuration, never from the request table's own formulas, so a wrong
join, a mis-recorded tier, a stage skipped or charged twice, a load faster than its links,
a wake that skipped its copy, or CPU stages running on cores the host lacks all fail here,
where a check that TTFT equals the sum of its parts cannot.

Where exactness cannot be derived from the log alone the check is a bound, and each
function says so: a load or CPU stage that may have shared its links or cores (the fluid
sharing is the simulator's to compute, not ours), a peer load (its chain's rate depends on
every hop), and a wake's swap (which idle instances it put to sleep is not recorded apart
from the keep-alive's own sleeps at the same instant).

The records are plain Python objects, not frames: the property tests run this after every
small simulation, where pandas' per-call overhead would cost more than the simulation.
"""

import pandas as pd

from sim.spec import ClusterConfig

from .lives import check_lives
from .periods import awake_periods
from .records import Row, columns
from .requests import check_requests
from .startups import check_cores, check_loads, check_startups


def check_timeline(requests: pd.DataFrame, instances: pd.DataFrame, config: ClusterConfig) -> None:
    """Assert that `requests` (requests.parquet) and `instances` (instances.parquet) of a
    run of `config` agree, request by request, start-up by start-up and load by load."""
    rows = [Row(*r) for r in instances[columns(Row)].itertuples(index=False)]
    lives = check_lives(rows, config)
    periods = awake_periods(lives, config)
    check_loads(periods)
    check_startups(periods)
    check_cores(periods)
    check_requests(requests, periods, config)
