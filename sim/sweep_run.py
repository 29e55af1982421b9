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
from sim import seeds
from sim.config import ClusterConfig
from sim.simulator import Simulation
from sim.summary import summarize
from sim.sweep_grid import RunPoint


@dataclass
class RunOutput:
    point: RunPoint
    requests: pd.DataFrame
    instances: pd.DataFrame
    summary: dict
    config_toml: str


def scale_rate(trace: pd.DataFrame, rate_scale: float) -> pd.DataFrame:
    """The trace at `rate_scale` times its arrival rate: arrival times divided by it."""
    return trace.assign(arrival_s=trace["arrival_s"] / rate_scale)


def simulate(point: RunPoint, config: ClusterConfig) -> RunOutput:
    """Run `point`; the same seed draws the same models and policy choices as `sim run`."""
    trace_path = Path(point.trace_path)
    trace = traces.load(
        trace_path, list(config.models), seeds.rng(point.seed, "trace"), config.zipf_exponent
    )
    sim = Simulation(
        config, scale_rate(trace, point.rate_scale), point.policy, seeds.rng(point.seed, "policy")
    )
    sim.run()
    summary = summarize(sim, point.policy, point.seed, trace_path)
    summary["sweep"] = point.record()
    return RunOutput(point, sim.table.frame(), sim.cluster.log.frame(), summary, config.to_toml())
