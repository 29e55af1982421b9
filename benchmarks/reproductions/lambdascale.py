"""lambdaScale (Yu et al., arXiv 2025): new nodes receive a model from the GPUs that
already serve it, in an RDMA multicast, and execute while its blocks arrive; against
ServerlessLLM, whose nodes each load from their own host memory or SSD, the tail TTFT of
a bursty trace falls "up to 5x".

The setting (configs/reproductions/lambdascale-arxiv25*.toml, each value's source beside
it; the paper's evaluation section was not at hand, so it comes from the paper's
artifact): 8 H800 nodes of one GPU (four for 70B), Llama-2 7B, 13B and 70B, one instance
always up, no keep-alive; the artifact's bursty trace of 497 requests, replayed 6, 3 and
1.5 times faster for the three models. ServerlessLLM loads from each node's host memory
or SSD; lambdaScale from a serving instance's GPUs down a multicast chain (thaw's peer
loading), its first prefill executing behind the bytes (thaw's execute-while-load). A
third system, the multicast without the execution, separates the two. thaw's figure: per
model, ServerlessLLM's P99 TTFT over lambdaScale's; the largest of the three models'.
"""

import tomllib
from pathlib import Path

import numpy as np
import pandas as pd

from reproductions.figures import plt, save
from reproductions.inputs import config_of, no_reference
from reproductions.verdict import CONFIGS, Reproduction
from sim.engine.simulator import Simulation
from sim.spec import ClusterConfig
from thaw_kernel import seeds
from traces.tokens import draw_tokens

SPEC = "lambdascale-arxiv25"
# label: (its cluster file's part, whether its engine executes while loading, its colour)
SYSTEMS = {
    "ServerlessLLM": ("sllm", False, "#d62728"),
    "multicast": ("lambdascale", False, "#9467bd"),
    "lambdaScale": ("lambdascale", True, "#1f77b4"),
}
ENGINE = "lambdascale"  # the engine of lambdascale-arxiv25.lambdascale.toml


def run(spec: dict, n_seeds: int) -> tuple[list[float], dict]:
    """Per seed, the largest model's ratio of ServerlessLLM's P99 TTFT to lambdaScale's
    (the model whose mean ratio over the seeds is largest); and per model and system the
    P99 and mean TTFT, the loads by tier and the ratio per seed."""
    workload = spec["workload"]
    arrivals = read_arrivals(CONFIGS / workload["trace"])
    per_model = {}
    for model, setting in workload["models"].items():
        trace = _trace(arrivals, model, setting, workload["tokens"])
        configs = {s: _config(f, ewl, model, setting) for s, (f, ewl, _) in SYSTEMS.items()}
        results = {s: _simulate(c, trace, workload["policy"], n_seeds) for s, c in configs.items()}
        sllm, lam = results["ServerlessLLM"]["p99_ttft_s"], results["lambdaScale"]["p99_ttft_s"]
        per_model[model] = {
            "requests": len(trace),
            "systems": results,
            "ratio_per_seed": [s / x for s, x in zip(sllm, lam, strict=True)],
        }
    largest = max(per_model, key=lambda m: np.mean(per_model[m]["ratio_per_seed"]))
    return per_model[largest]["ratio_per_seed"], {"figure_model": largest, "models": per_model}


def read_arrivals(path: Path) -> np.ndarray:
    """The artifact's arrival times (s), one a line, '#' lines its source and licence."""
    lines = path.read_text().splitlines()
    return np.array([float(line) for line in lines if line and not line.startswith("#")])


def _trace(arrivals: np.ndarray, model: str, setting: dict, tokens: str) -> pd.DataFrame:
    """The artifact's replay for `model`: times cut to whole seconds, gaps divided by the
    model's speed-up, a request at each but the last, after the warm-up."""
    whole = np.floor(arrivals[:-1])
    arrival = (whole - whole[0]) / float(setting["speedup"]) + float(setting["warmup_s"])
    inputs, outputs = draw_tokens(tokens, len(arrival), seeds.rng(0, "trace"), no_reference)
    return pd.DataFrame(
        {"arrival_s": arrival, "model": model, "input_tokens": inputs, "output_tokens": outputs}
    )


def _config(part: str, ewl: bool, model: str, setting: dict) -> ClusterConfig:
    """A system's cluster file with `model` alone in its catalog, its nodes' GPUs and
    host memory as the model's setting says, and its engine's execute-while-load `ewl`."""
    table = tomllib.loads((CONFIGS / f"{SPEC}.{part}.toml").read_text())
    table["models"] = {model: table["models"][model]}
    for group in table["servers"]:
        group["gpus"] = setting.get("gpus_per_node", group["gpus"])
        group["dram"] = setting.get("dram", group["dram"])
    if ENGINE in table.get("engines", {}):
        table["engines"][ENGINE]["execute_while_load"] = ewl
    return config_of(table, f"{SPEC}.{part}.toml")


def _simulate(config: ClusterConfig, trace: pd.DataFrame, policy: str, n_seeds: int) -> dict:
    """Per seed: the P99 and mean TTFT of the trace's requests, and the loads by tier."""
    p99, mean, loads = [], [], []
    for seed in range(n_seeds):
        sim = Simulation(config, trace, policy, seeds.rng(seed, "policy"))
        sim.run()
        ttft = sim.table.ttft_s
        p99.append(float(np.percentile(ttft, 99)))
        mean.append(float(np.mean(ttft)))
        loads.append({tier: int(n) for tier, n in sim.loads_by_tier.items()})
    return {"p99_ttft_s": p99, "mean_ttft_s": mean, "loads_by_tier": loads}


def figure(details: dict, paper: dict, path: Path) -> None:
    """Per model, each system's P99 TTFT (seed 0), and ServerlessLLM's over lambdaScale's
    beside the paper's "up to"."""
    models = list(details["models"])
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    x = np.arange(len(models))
    width = 0.8 / len(SYSTEMS)
    for k, (system, (_, _, color)) in enumerate(SYSTEMS.items()):
        values = [details["models"][m]["systems"][system]["p99_ttft_s"][0] for m in models]
        offset = (k - (len(SYSTEMS) - 1) / 2) * width
        axes[0].bar(x + offset, values, width, label=system, color=color)
    axes[0].set(xticks=x, xticklabels=models, ylabel="P99 TTFT (s)", title="tail TTFT")
    axes[0].set_yscale("log")
    axes[0].legend(fontsize=8)
    ratios = [np.mean(details["models"][m]["ratio_per_seed"]) for m in models]
    axes[1].bar(x, ratios, 0.5, color="#1f77b4", label="thaw")
    axes[1].axhline(paper["value"], color="#444444", linestyle="--", label="the paper: up to")
    axes[1].set(
        xticks=x, xticklabels=models, ylabel="ServerlessLLM / lambdaScale", title="P99 ratio"
    )
    axes[1].set_ylim(0, 1.3 * max(paper["value"], *ratios))
    axes[1].legend(fontsize=8, loc="upper right")
    fig.suptitle(
        f"lambdaScale (arXiv 2025) setting, the artifact's trace; "
        f"the paper: up to {paper['value']:g}x lower tail latency",
        fontsize=10,
    )
    save(fig, path)


REPRODUCTION = Reproduction(spec=SPEC, run=run, figure=figure)
