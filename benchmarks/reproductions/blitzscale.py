"""BlitzScale (Zhang et al., OSDI '25): loading a new instance from the GPUs that already
serve the model, over the compute network in a multicast chain, instead of from each
host's SSD or DRAM cache, shortens the TTFT of a bursty workload against ServerlessLLM.

The setting (configs/reproductions/blitzscale-osdi25*.toml, each value's source beside
it): cluster A's 4 hosts of 8 A800s as 8 servers of 4 GPUs; Qwen2.5-72B on 4 GPUs an
instance, at least two always up; 300 s of Poisson arrivals whose rate bursts 5x within
2 s, the first burst at 0:05, the mean half the cluster's capacity. ServerlessLLM loads
from each server's SSD, or its DRAM once a load there filled it; BlitzScale from a
serving instance's GPUs (thaw's peer loading). thaw's figure: 1 - BlitzScale's mean TTFT
over ServerlessLLM's, per seed.
"""

from pathlib import Path

import numpy as np
import pandas as pd

from reproductions.figures import plt, save
from reproductions.inputs import no_reference
from reproductions.verdict import CONFIGS, Reproduction
from sim.config import read_config
from sim.engine.simulator import Simulation
from sim.spec import ClusterConfig
from thaw_kernel import seeds
from traces.bursts import Bursts, bursty_arrivals
from traces.tokens import draw_tokens

SYSTEMS = {"S-LLM": "sllm", "BlitzScale": "blitzscale"}  # label: its cluster file's part
MODEL = "qwen2.5-72b"


def run(spec: dict, n_seeds: int) -> tuple[list[float], dict]:
    """Per seed, 1 - mean TTFT(BlitzScale) / mean TTFT(S-LLM); and each system's mean and
    P99 TTFT and loads by tier per seed, seed 0's TTFT per second, and the capacity."""
    workload = spec["workload"]
    configs = {s: read_config(CONFIGS / f"blitzscale-osdi25.{f}.toml") for s, f in SYSTEMS.items()}
    capacity = _capacity(configs["S-LLM"], workload["tokens"])
    bursts = _bursts(workload)
    mean_ttft = {s: [] for s in SYSTEMS}
    p99_ttft = {s: [] for s in SYSTEMS}
    loads = {s: [] for s in SYSTEMS}
    timeline: dict[str, list[float]] = {}
    for seed in range(n_seeds):
        trace = _trace(workload, bursts, capacity, seed)
        for system, config in configs.items():
            sim = Simulation(config, trace, workload["policy"], seeds.rng(seed, "policy"))
            sim.run()
            ttft = sim.table.ttft_s
            mean_ttft[system].append(float(np.mean(ttft)))
            p99_ttft[system].append(float(np.percentile(ttft, 99)))
            loads[system].append({k: int(v) for k, v in sim.loads_by_tier.items()})
            if seed == 0:
                arrival = trace.arrival_s.to_numpy() - workload["warmup_s"]
                timeline[system] = _per_second(arrival, ttft, workload["duration_s"])
                timeline["requests"] = _per_second(arrival, None, workload["duration_s"])
    per_seed = [1 - b / s for b, s in zip(mean_ttft["BlitzScale"], mean_ttft["S-LLM"], strict=True)]
    details = {
        "capacity_rps": capacity,
        "mean_rps": workload["load"] * capacity,
        "mean_ttft_s": mean_ttft,
        "p99_ttft_s": p99_ttft,
        "loads_by_tier": loads,
        "seed0_per_second": timeline,
    }
    return per_seed, details


def _capacity(config: ClusterConfig, tokens: str) -> float:
    """Requests/s the cluster serves with every instance saturated: each holds a full batch,
    and a request takes its prefill and its share of the batch's decode steps."""
    model = config.models[MODEL]
    gpus = sum(group.count * group.gpus for group in config.servers)
    prompt, output = _means(tokens)
    batch = model.max_batch
    per_request = model.prefill_s(round(prompt)) + output * model.decode_step(batch) / batch
    return (gpus // model.gpus) / per_request


def _means(tokens: str) -> tuple[float, float]:
    """The prompt and output means of a `lognormal:IN,CV,OUT,CV` token spec."""
    kind, _, body = tokens.partition(":")
    if kind != "lognormal":
        raise ValueError(f"{tokens!r}: the capacity needs the lognormal spec's means")
    values = [float(v) for v in body.split(",")]
    return values[0], values[2]


def _bursts(workload: dict) -> Bursts:
    return Bursts(
        first_s=float(workload["first_burst_s"]),
        period_s=float(workload["burst_period_s"]),
        factor=float(workload["burst_factor"]),
        ramp_s=float(workload["ramp_s"]),
        hold_s=float(workload["burst_hold_s"]),
    )


def _trace(workload: dict, bursts: Bursts, capacity: float, seed: int) -> pd.DataFrame:
    """The bursty trace at `load` x `capacity` on average, after `warmup_s` with none."""
    rng = seeds.rng(seed, "trace")
    duration = float(workload["duration_s"])
    arrival = bursty_arrivals(rng, bursts, workload["load"] * capacity, duration)
    inputs, outputs = draw_tokens(workload["tokens"], len(arrival), rng, no_reference)
    return pd.DataFrame(
        {
            "arrival_s": arrival + float(workload["warmup_s"]),
            "model": MODEL,
            "input_tokens": inputs,
            "output_tokens": outputs,
        }
    )


def _per_second(arrival: np.ndarray, ttft: np.ndarray | None, duration: float) -> list[float]:
    """Per 1-s window of arrival: the requests (`ttft` None), else their mean TTFT (NaN
    where none arrived), as the paper's Fig. 17 plots them."""
    window = np.floor(arrival).astype(int)
    counts = np.bincount(window, minlength=int(duration))[: int(duration)]
    if ttft is None:
        return counts.astype(float).tolist()
    sums = np.bincount(window, weights=ttft, minlength=int(duration))[: int(duration)]
    with np.errstate(invalid="ignore", divide="ignore"):
        return (sums / counts).tolist()


def figure(details: dict, paper: dict, path: Path) -> None:
    """As the paper's Fig. 17 row for BurstGPT: the request rate, the mean TTFT per 1-s
    window (seed 0), and the mean TTFT per seed beside the paper's reduction."""
    timeline = details["seed0_per_second"]
    seconds = np.arange(len(timeline["requests"]))
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.5))
    axes[0].plot(seconds, timeline["requests"], color="#444444")
    axes[0].set(xlabel="time (s)", ylabel="requests/s", title="arrivals (seed 0)")
    for system, color in (("S-LLM", "#d62728"), ("BlitzScale", "#1f77b4")):
        axes[1].plot(seconds, timeline[system], label=system, color=color)
    axes[1].set(xlabel="time (s)", ylabel="mean TTFT (s)", title="TTFT per 1-s window")
    axes[1].set_yscale("log")
    axes[1].legend(fontsize=8)
    means = details["mean_ttft_s"]
    x = np.arange(len(means["S-LLM"]))
    axes[2].bar(x - 0.2, means["S-LLM"], 0.4, label="S-LLM", color="#d62728")
    axes[2].bar(x + 0.2, means["BlitzScale"], 0.4, label="BlitzScale", color="#1f77b4")
    axes[2].set(xlabel="seed", ylabel="mean TTFT (s)", title="mean TTFT per seed")
    axes[2].legend(fontsize=8)
    fig.suptitle(
        f"BlitzScale (OSDI '25) setting, Qwen2.5-72B on BurstGPT-like bursts; "
        f"the paper: {paper['value']:.1%} shorter TTFT",
        fontsize=10,
    )
    save(fig, path)


REPRODUCTION = Reproduction(spec="blitzscale-osdi25", run=run, figure=figure)
