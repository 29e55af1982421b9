"""vLLM sleep mode (vLLM blog, 2025): an engine put to sleep keeps its process, CUDA
context and graphs and gives up its weights, to host memory (level 1) or altogether
(level 2); waking it takes a fraction of a second to a few seconds, where a fresh engine
takes tens.

The setting (configs/reproductions/vllm-sleep*.toml, each value's source beside it): one
server of four A100s; each of the post's four models alone on it at the levels the post
measured; a request every 300 s, so that the engine sleeps between them; the first is
the cold start, each later one wakes it. A wake's time is its request's start-up (the
queue is empty). thaw's figure: level 2's wake over level 1's, the mean over the two
models the post measured at both levels.
"""

from pathlib import Path

import numpy as np
import pandas as pd

from reproductions.figures import plt, save
from reproductions.verdict import CONFIGS, Reproduction
from sim.config import read_config
from sim.engine.simulator import Simulation
from sim.spec import ClusterConfig
from thaw_kernel import seeds

CLUSTER = CONFIGS / "vllm-sleep.cluster.toml"


def run(spec: dict, n_seeds: int) -> tuple[list[float], dict]:
    """Per seed, the mean over the models measured at both levels of level 2's wake over
    level 1's; and each (model, level)'s wakes per seed (the median of its wakes)."""
    config = read_config(CLUSTER)
    workload = spec["workload"]
    points = [(w["model"], int(w["level"])) for w in spec["paper"]["wakes"]]
    wakes = {_key(m, lv): [] for m, lv in points}
    for seed in range(n_seeds):
        for model, level in points:
            wakes[_key(model, level)].append(_wake_s(config, workload, model, level, seed))
    both = sorted({m for m, lv in points if lv == 2})
    per_seed = [
        float(np.mean([wakes[_key(m, 2)][k] / wakes[_key(m, 1)][k] for m in both]))
        for k in range(n_seeds)
    ]
    return per_seed, {"wake_s": wakes}


def _key(model: str, level: int) -> str:
    return f"{model}-l{level}"


def _wake_s(config: ClusterConfig, workload: dict, model: str, level: int, seed: int) -> float:
    """The median start-up of the requests after the first: each wakes the engine."""
    count = int(workload["requests"])
    trace = pd.DataFrame(
        {
            "model": _key(model, level),
            "arrival_s": np.arange(count) * float(workload["gap_s"]),
            "input_tokens": int(workload["input_tokens"]),
            "output_tokens": int(workload["output_tokens"]),
        }
    )
    sim = Simulation(config, trace, workload["policy"], seeds.rng(seed, "policy"))
    sim.run()
    return float(np.median(sim.table.startup_s[1:]))


def figure(details: dict, paper: dict, path: Path) -> None:
    """Wake time per model and level, the post's beside thaw's (mean over seeds), with the
    post's cold reload for scale, on a log axis as the post's charts compare them."""
    rows = paper["wakes"]
    labels = [f"{w['model']}\nlevel {w['level']}" for w in rows]
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(8, 3.8))
    ax.bar(x - 0.27, [w["reload"] for w in rows], 0.27, label="reload, post", color="#bbbbbb")
    ax.bar(x, [w["wake"] for w in rows], 0.27, label="wake, post", color="#9ecae1")
    thaw = [np.mean(details["wake_s"][_key(w["model"], w["level"])]) for w in rows]
    ax.bar(x + 0.27, thaw, 0.27, label="wake, thaw", color="#3182bd")
    ax.set_xticks(x, labels, fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("seconds")
    ax.set_title("vLLM sleep mode (A100): wake against reload")
    ax.legend(fontsize=8)
    save(fig, path)


REPRODUCTION = Reproduction(spec="vllm-sleep", run=run, figure=figure)
