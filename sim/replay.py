"""One replay, the way every entry point runs it: the trace's draws and the policy's
draws come from their own streams of the seed (`sim.seeds`), so runs that differ only
in policy see the same requests."""

from collections.abc import Callable
from pathlib import Path

import traces
from sim import seeds
from sim.config import ClusterConfig
from sim.simulator import Simulation


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
    `max_requests` requests, or until simulated time `until`."""
    trace = traces.load(
        trace_path,
        list(config.models),
        seeds.rng(seed, "trace"),
        config.zipf_exponent,
        options=trace_options,
    )
    if max_requests is not None:
        trace = trace.iloc[:max_requests]
    if until is not None:
        trace = trace[trace["arrival_s"].to_numpy() < until]
    sim = Simulation(config, trace, policy, seeds.rng(seed, "policy"), progress, check)
    sim.run(until)
    return sim
