"""ServerlessLLM (Fu et al., OSDI '24): a scheduler that estimates each server's start-up
time (the queue, the load from the tier holding the checkpoint, a migration's cost) and
takes the cheapest beats the baselines that ignore where checkpoints are.

The setting (configs/reproductions/serverlessllm-osdi24*.toml, each value's source beside
it): 4 servers of 4 GPUs, 24 OPT checkpoints each on one server's NVMe; the bundled Azure
Functions 2019 sample's first 30 minutes, functions striped over the models, rescaled to
each request rate, with GSM8K-like and ShareGPT-like token lengths; every rung of the
policy ladder, with `preemption` as the paper's Shepherd* and `random` as its serverless
baseline. thaw's figure: the headline cell's baseline P99 TTFT over startup-aware's, per
seed.
"""

from pathlib import Path

import numpy as np

import traces
from reproductions.figures import plt, save
from reproductions.verdict import CONFIGS, FUNCTIONS_SAMPLE, Reproduction
from sim.api import replay
from sim.config import read_config
from sim.spec import ClusterConfig

CLUSTER = CONFIGS / "serverlessllm-osdi24.cluster.toml"
INVOCATIONS = FUNCTIONS_SAMPLE / "invocations.csv"


def run(spec: dict, n_seeds: int) -> tuple[list[float], dict]:
    """Per seed, the headline baseline's P99 TTFT over startup-aware's; and every cell's
    P99 (workload, rate, policy: one per seed)."""
    config = read_config(CLUSTER)
    workload = spec["workload"]
    p99: dict[str, dict[str, list[float]]] = {}
    for name, tokens in workload["tokens"].items():
        base = _base_rate(config, tokens, workload["minutes"])
        for rate in workload["rates"]:
            cell = p99.setdefault(_cell(name, rate), {})
            for policy in workload["policies"]:
                cell[policy] = [
                    _p99(config, tokens, workload["minutes"], rate / base, policy, seed)
                    for seed in range(n_seeds)
                ]
    head = spec["paper"]["headline"]
    cell = p99[_cell(head["workload"], head["rate"])]
    per_seed = [b / s for b, s in zip(cell[head["baseline"]], cell["startup-aware"], strict=True)]
    return per_seed, {"p99_ttft_s": p99}


def _cell(workload: str, rate: float) -> str:
    return f"{workload}@{rate:g}"


def _options(tokens: str, minutes: float, scale: float = 1.0) -> traces.Options:
    return traces.Options(mapping="stripe", tokens=tokens, window=(0.0, minutes * 60), scale=scale)


def _base_rate(config: ClusterConfig, tokens: str, minutes: float) -> float:
    """Requests per second of the sample's first `minutes`, unscaled."""
    options = _options(tokens, minutes)
    frame = traces.read(INVOCATIONS, list(config.models), np.random.default_rng(0), options=options)
    return len(frame.frame) / (minutes * 60)


def _p99(
    config: ClusterConfig, tokens: str, minutes: float, scale: float, policy: str, seed: int
) -> float:
    sim = replay(config, INVOCATIONS, policy, seed, trace_options=_options(tokens, minutes, scale))
    return float(np.percentile(sim.table.ttft_s, 99))


def figure(details: dict, paper: dict, path: Path) -> None:
    """P99 TTFT against the request rate per policy, one panel per workload (thaw's mean
    over seeds), as the paper plots its scheduler against the baselines."""
    cells = details["p99_ttft_s"]
    workloads = sorted({c.split("@")[0] for c in cells})
    fig, axes = plt.subplots(1, len(workloads), figsize=(5 * len(workloads), 3.5), sharey=True)
    for ax, workload in zip(np.atleast_1d(axes), workloads, strict=True):
        mine = {float(c.split("@")[1]): v for c, v in cells.items() if c.split("@")[0] == workload}
        rates = sorted(mine)
        for policy in mine[rates[0]]:
            ax.plot(rates, [np.mean(mine[r][policy]) for r in rates], marker="o", label=policy)
        ax.set_title(workload)
        ax.set_xlabel("requests/s")
        ax.set_yscale("log")
    np.atleast_1d(axes)[0].set_ylabel("P99 TTFT (s), thaw")
    np.atleast_1d(axes)[0].legend(fontsize=8)
    low, high = paper["value"]
    title = f"ServerlessLLM (OSDI '24) setting; the paper: {low}-{high}x lower P99"
    fig.suptitle(title, fontsize=10)
    save(fig, path)


REPRODUCTION = Reproduction(spec="serverlessllm-osdi24", run=run, figure=figure)
