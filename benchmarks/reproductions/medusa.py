"""Medusa (Zeng et al., ASPLOS '25): materializing the loading phase's KV-cache sizing and
CUDA graphs cuts a cold start's loading phase, and so the tail TTFT of a small cluster
whose instances start and exit with the load.

The setting (configs/reproductions/medusa-asplos25*.toml, each value's source beside it):
one server of 4 GPUs, one instance per GPU, checkpoints on its SSDs; Poisson arrivals at
2 and 10 requests/s for 60 s to one model, Qwen-4B or Llama-7B; an instance takes up to 16
requests and exits when idle; a cold start pays the loading phase only, vLLM's stages or
Medusa's. thaw's figure: the P99 TTFT reduction, Medusa against vLLM, averaged over the
four (model, rate) cells, per seed.
"""

from pathlib import Path

import numpy as np
import pandas as pd

from reproductions.figures import plt, save
from reproductions.inputs import no_reference
from reproductions.verdict import CONFIGS, Reproduction
from sim.config import read_config
from sim.engine.simulator import Simulation
from thaw_kernel import seeds
from traces.generate import synthesize

CLUSTER = CONFIGS / "medusa-asplos25.cluster.toml"
SYSTEMS = ("vllm", "medusa")


def run(spec: dict, n_seeds: int) -> tuple[list[float], dict]:
    """Per seed, the mean over the cells of 1 - P99(Medusa) / P99(vLLM); and each cell's
    P99 TTFTs per seed."""
    config = read_config(CLUSTER)
    workload = spec["workload"]
    cells = [(c["model"], float(c["rate"])) for c in spec["paper"]["cells"]]
    p99 = {f"{m}@{r:g}": {s: [] for s in SYSTEMS} for m, r in cells}
    for seed in range(n_seeds):
        for model, rate in cells:
            trace = _trace(workload, rate, seed)
            for system in SYSTEMS:
                named = trace.assign(model=f"{model}-{system}")
                sim = Simulation(config, named, workload["policy"], seeds.rng(seed, "policy"))
                sim.run()
                p99[f"{model}@{rate:g}"][system].append(float(np.percentile(sim.table.ttft_s, 99)))
    per_seed = [
        float(np.mean([1 - c["medusa"][k] / c["vllm"][k] for c in p99.values()]))
        for k in range(n_seeds)
    ]
    return per_seed, {"p99_ttft_s": p99}


def _trace(workload: dict, rate: float, seed: int) -> pd.DataFrame:
    """Poisson arrivals at `rate` for the workload's duration, token lengths drawn (again
    where needed) until prompt and output together stay under `max_tokens`."""
    rng = seeds.rng(seed, "trace")
    trace = synthesize(
        rng,
        ["m"],
        rate=rate,
        duration=float(workload["duration_s"]),
        tokens=workload["tokens"],
        reference=no_reference,
    )
    limit = int(workload["max_tokens"])
    while (over := (trace.input_tokens + trace.output_tokens >= limit).to_numpy()).any():
        again = synthesize(
            rng, ["m"], rate=1.0, count=int(over.sum()), tokens=workload["tokens"],
            reference=no_reference,
        )  # fmt: skip
        trace.loc[over, ["input_tokens", "output_tokens"]] = again[
            ["input_tokens", "output_tokens"]
        ].to_numpy()
    return trace


def figure(details: dict, paper: dict, path: Path) -> None:
    """P99 TTFT per cell, vLLM and Medusa, thaw's mean over seeds beside the paper's (its
    artifact's re-run, as its Figure 10)."""
    cells = list(details["p99_ttft_s"])
    theirs = {f"{c['model']}@{c['rate']:g}": c for c in paper["cells"]}
    x = np.arange(len(cells))
    fig, ax = plt.subplots(figsize=(7, 3.5))
    bars = [
        ("vLLM, paper", [theirs[c]["vllm"] for c in cells], "#bbbbbb"),
        ("vLLM, thaw", [np.mean(details["p99_ttft_s"][c]["vllm"]) for c in cells], "#666666"),
        ("Medusa, paper", [theirs[c]["medusa"] for c in cells], "#9ecae1"),
        ("Medusa, thaw", [np.mean(details["p99_ttft_s"][c]["medusa"]) for c in cells], "#3182bd"),
    ]
    for k, (label, values, color) in enumerate(bars):
        ax.bar(x + (k - 1.5) * 0.2, values, 0.2, label=label, color=color)
    ax.set_xticks(x, [c.replace("@", ", ") + " req/s" for c in cells])
    ax.set_ylabel("P99 TTFT (s)")
    ax.set_title("Medusa (ASPLOS '25): P99 TTFT, 4 GPUs, 60 s of Poisson arrivals")
    ax.legend(fontsize=8, ncol=2)
    save(fig, path)


REPRODUCTION = Reproduction(spec="medusa-asplos25", run=run, figure=figure)
