"""One run of a sweep, as a worker process executes it: load, rate-scale, simulate, summarise.

The rate scale is applied to the loaded canonical trace: arrival times are divided by it
(time compression), so a scale of 2 replays the same requests, in the same order with the
same sizes and models, at twice the arrival rate. Its resolved config.toml alone does not
reproduce a scaled run; the summary's `sweep` record holds the scale.
"""

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

import traces
from sim.config import ClusterConfig
from sim.replay import replay
from sim.summary import summarize
from sim.sweep_grid import RunPoint


@dataclass
class RunOutput:
    point: RunPoint
    requests: pd.DataFrame
    instances: pd.DataFrame
    summary: dict
    config_toml: str


def simulate(point: RunPoint, config: ClusterConfig) -> RunOutput:
    """Run `point` as `sim run` would (the same seed draws the same models and policy
    choices), its trace time-compressed by the rate scale."""
    trace_path = Path(point.trace_path)
    options = traces.Options(compress=point.rate_scale)
    sim = replay(config, trace_path, point.policy, point.seed, trace_options=options)
    summary = summarize(sim, point.policy, point.seed, trace_path)
    summary["sweep"] = point.record()
    return RunOutput(point, sim.table.frame(), sim.cluster.log.frame(), summary, config.to_toml())
