"""FaasCache (Fuerst and Sharma, ASPLOS '21): keeping functions alive is caching, and
Greedy-Dual (keep the containers whose frequency times cold-start cost per byte of
memory is highest) cuts the time cold starts add against a fixed time-to-live.

The setting (configs/reproductions/faascache-asplos21.toml, each value's source beside
it): the bundled Azure Functions 2019 sample, functions invoked at least twice, each its
own model; one server whose memory is counted in slots (thaw's GPUs), a function's
container taking the slots its memory needs; a cold start adds the function's maximum
duration less its average, a warm run takes the average; one invocation per container;
an invocation that finds no memory is dropped (the `drop` queue discipline). Swept over
the server's memory, the 10-minute TTL and Greedy-Dual. thaw's figure: the cold-start
overhead (the start-ups' seconds over the runs' seconds) summed over the sweep under the
TTL, over the same under Greedy-Dual.
"""

from pathlib import Path

import numpy as np
import pandas as pd

import traces
from reproductions.figures import plt, save
from reproductions.inputs import config_of
from reproductions.verdict import FUNCTIONS_SAMPLE, Reproduction
from sim.config import with_keep_alive
from sim.engine.simulator import Simulation
from sim.spec import ClusterConfig
from thaw_kernel import seeds

KEYS = ["HashOwner", "HashApp", "HashFunction"]
MS = 1e-3


def run(spec: dict, n_seeds: int) -> tuple[list[float], dict]:
    """Per seed, the TTL's summed overhead over Greedy-Dual's; and per policy and memory
    size, each seed's overhead, cold-start share and share of invocations dropped."""
    workload = spec["workload"]
    functions = sample_functions(int(workload["slot_mb"]))
    configs = {
        gb: cluster(functions, gb * 1024 // int(workload["slot_mb"]), workload["queue"])
        for gb in workload["memory_gb"]
    }
    policies = {"ttl": workload["ttl"], "greedy-dual": workload["greedy_dual"]}
    cells: dict[str, dict[str, dict[str, list[float]]]] = {
        name: {f"{gb}": {"overhead": [], "cold": [], "dropped": []} for gb in workload["memory_gb"]}
        for name in policies
    }
    for seed in range(n_seeds):
        trace = _trace(list(functions.index), workload, seed)
        for gb, config in configs.items():
            for name, keep_alive in policies.items():
                figures = measure(config, trace, workload["policy"], keep_alive, seed)
                for key, value in zip(("overhead", "cold", "dropped"), figures, strict=True):
                    cells[name][f"{gb}"][key].append(value)
    per_seed = [
        sum(c["overhead"][k] for c in cells["ttl"].values())
        / sum(c["overhead"][k] for c in cells["greedy-dual"].values())
        for k in range(n_seeds)
    ]
    return per_seed, {"cells": cells}


def sample_functions(slot_mb: int) -> pd.DataFrame:
    """Per function of the sample, busiest first (the `app` mapping's order: each
    function is its own application in the sample), indexed by its model's name
    (`f000`, ...): its slots, warm and cold seconds."""
    invocations = pd.read_csv(FUNCTIONS_SAMPLE / "invocations.csv")
    minutes = [c for c in invocations.columns if c.isdigit()]
    busiest = np.argsort(-invocations[minutes].sum(axis=1).to_numpy(), kind="stable")
    durations = pd.read_csv(FUNCTIONS_SAMPLE / "durations.csv")[[*KEYS, "Average", "Maximum"]]
    memory = pd.read_csv(FUNCTIONS_SAMPLE / "memory.csv")[[*KEYS, "AverageAllocatedMb"]]
    rows = invocations.iloc[busiest][KEYS].merge(durations, on=KEYS, how="left")
    rows = rows.merge(memory, on=KEYS, how="left")
    return pd.DataFrame(
        {
            "slots": np.ceil(rows["AverageAllocatedMb"] / slot_mb).clip(lower=1).astype(int),
            "warm_s": rows["Average"].clip(lower=1.0) * MS,  # a run of at least 1 ms
            "cold_extra_s": (rows["Maximum"] - rows["Average"]).clip(lower=0.0) * MS,
        }
    ).set_axis([f"f{rank:03d}" for rank in range(len(rows))])


def cluster(functions: pd.DataFrame, slots: int, queue: str) -> ClusterConfig:
    """One server of `slots` slots under the queue discipline `queue`; each function's
    model, on an engine that starts in its cold extra."""
    table: dict = {
        "keep_alive_s": 600.0,
        "instance_startup_s": 0.0,
        "queue": queue,
        "servers": [
            {
                "name": "faas",
                "count": 1,
                "gpus": int(slots),
                "gpu_memory": "1GB",
                "dram": "1GB",
                "ssd": "1TB",
                "host_cores": 1024,
            }
        ],
        "engines": {},
        "models": {},
    }
    for row in functions.itertuples():
        name = row.Index
        table["engines"][name] = {
            "stages": [{"name": "start", "seconds": row.cold_extra_s}, {"name": "load"}]
        }
        table["models"][name] = {
            "weights": 1,
            "gpus": int(row.slots),
            "prefill_tokens_per_s": 1.0 / row.warm_s,  # one token: the warm run
            "decode_step_s": 1e-9,
            "max_batch": 1,
            "ssd_servers": [0],
            "engine": name,
        }
    return config_of(table, "faascache.toml")


def _trace(models: list[str], workload: dict, seed: int) -> pd.DataFrame:
    """The sample's invocations on their functions' models, those of functions invoked
    fewer than `min_invocations` times left out."""
    options = traces.Options(mapping="app", tokens="fixed:1,1", placement=workload["placement"])
    rng = seeds.rng(seed, "trace")
    frame = traces.read(FUNCTIONS_SAMPLE / "invocations.csv", models, rng, options=options).frame
    counts = frame["model"].value_counts()
    kept = counts[counts >= int(workload["min_invocations"])].index
    return frame[frame["model"].isin(kept)].reset_index(drop=True)


def measure(
    config: ClusterConfig, trace: pd.DataFrame, policy: str, keep_alive: str, seed: int
) -> tuple[float, float, float]:
    """(the seconds cold starts added over the seconds of the runs, the share of the
    invocations run that started cold, the share of all invocations dropped for want of
    memory). A dropped invocation adds no overhead, as in the artifact."""
    sim = Simulation(with_keep_alive(config, keep_alive), trace, policy, seeds.rng(seed, "policy"))
    sim.run()
    table = sim.table.frame()
    placed = table[table["server"] >= 0]
    overhead = float(placed["startup_s"].sum() / placed["prefill_s"].sum())
    cold = float((placed["tier"] != "warm").mean())
    return overhead, cold, float((table["status"] == "dropped").mean())


def figure(details: dict, paper: dict, path: Path) -> None:
    """Cold-start overhead and cold-start share against server memory, the TTL and
    Greedy-Dual (thaw's mean over seeds), as the paper plots them across memory sizes."""
    cells = details["cells"]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for name, style in (("ttl", "o-"), ("greedy-dual", "s-")):
        sizes = sorted(cells[name], key=float)
        gb = [float(s) for s in sizes]
        for ax, key in ((axes[0], "overhead"), (axes[1], "cold")):
            ax.plot(gb, [100 * np.mean(cells[name][s][key]) for s in sizes], style, label=name)
    axes[0].set_ylabel("% increase in execution time")
    axes[1].set_ylabel("% cold starts")
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xlabel("server memory (GB)")
        ax.legend(fontsize=8)
    fig.suptitle(f"FaasCache (ASPLOS '21) setting; the paper: more than {paper['above']:g}x")
    save(fig, path)


REPRODUCTION = Reproduction(spec="faascache-asplos21", run=run, figure=figure)
