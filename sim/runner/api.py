"""thaw's Python API: `run` one trace on one cluster under one policy, as `python -m sim
run` does, and get its tables and summary back.

The trace's draws and the policy's draws come from their own streams of the seed
(`thaw_kernel.seeds`), so runs that differ only in policy see the same requests.
"""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

import traces
from sim.config import read_config, with_keep_alive, with_queue
from sim.engine.simulator import Simulation
from sim.results.run_dir import write_run
from sim.results.summary import summarize
from sim.spec import ClusterConfig, KeepAliveSpec
from thaw_kernel import seeds


@dataclass(frozen=True)
class RunResult:
    """What a run directory holds, in memory: `write` publishes it as one."""

    requests: pd.DataFrame  # requests.parquet: one row per request
    instances: pd.DataFrame  # instances.parquet: one row per instance
    summary: dict  # summary.json
    config: ClusterConfig  # config.toml: the resolved configuration

    def write(self, out: Path) -> None:
        """Publish as the run directory `out`, atomically (`sim.results.run_dir`)."""
        write_run(out, self.requests, self.instances, self.summary, self.config.to_toml())


def run(
    policy: str = "locality",
    trace: str | Path | None = None,
    cluster: str | Path | ClusterConfig | None = None,
    seed: int = 0,
    *,
    profile: str | Path | None = None,
    trace_options: traces.Options | None = None,
    check: bool = False,
    max_requests: int | None = None,
    until: float | None = None,
    progress: Callable[[int, int], None] | None = None,
    queue: str | None = None,
    keep_alive: str | KeepAliveSpec | None = None,
) -> RunResult:
    """Simulate `trace` (default: the bundled trace) on `cluster` (a TOML path laid over
    the defaults, an already-loaded config, or None for the defaults; `profile`'s hardware
    numbers laid over a path) under `policy` with `seed`, and the configuration's queue
    discipline and keep-alive policy unless `queue` or `keep_alive` names another; see
    `replay` for the rest."""
    config = cluster if isinstance(cluster, ClusterConfig) else read_config(cluster, profile)
    if queue is not None:
        config = with_queue(config, queue, "queue")
    if keep_alive is not None:
        config = with_keep_alive(config, keep_alive)
    trace_path = Path(trace) if trace is not None else traces.default_trace()
    sim = replay(
        config, trace_path, policy, seed, progress, trace_options, check, max_requests, until
    )
    summary = summarize(sim, policy, seed, trace_path)
    return RunResult(sim.table.frame(), sim.cluster.log.frame(), summary, config)


def replay(
    config: ClusterConfig,
    trace_path: Path,
    policy: str,
    seed: int,
    progress: Callable[[int, int], None] | None = None,
    trace_options: traces.Options | None = None,
    check: bool = False,
    max_requests: int | None = None,
    until: float | None = None,
) -> Simulation:
    """Load `trace_path` for `config`'s catalog (read and transformed as `trace_options`
    say) and simulate it (auditing every event if `check`): to the end, or only its first
    `max_requests` requests, or until simulated time `until`. The finished simulation,
    for callers that inspect its state beyond the tables."""
    trace = traces.read(
        trace_path,
        list(config.models),
        seeds.rng(seed, "trace"),
        config.zipf_exponent,
        options=trace_options,
    ).frame
    if max_requests is not None:
        trace = trace.iloc[:max_requests]
    if until is not None:
        trace = trace[trace["arrival_s"].to_numpy() < until]
    sim = Simulation(config, trace, policy, seeds.rng(seed, "policy"), progress, check)
    sim.run(until)
    return sim
