"""One run of a sweep, as a worker process executes it: load, rate-scale, simulate, summarise.

The rate scale is applied to the loaded canonical trace: arrival times are divided by it
(time compression), so a scale of 2 replays the same requests, in the same order with the
same sizes and models, at twice the arrival rate. Its resolved config.toml alone does not
reproduce a scaled run; the summary's `sweep` record holds the scale.
"""

from dataclasses import dataclass

import pandas as pd

import traces
from sim.runner.api import run
from sim.runner.sweep.grid import RunPoint
from sim.spec import ClusterConfig


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
    options = traces.Options(compress=point.rate_scale)
    result = run(point.policy, point.trace_path, config, point.seed, trace_options=options)
    summary = {**result.summary, "sweep": point.record()}
    return RunOutput(point, result.requests, result.instances, summary, config.to_toml())
