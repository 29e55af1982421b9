"""Serverless in the Wild (Shahrad et al., USENIX ATC '20): a keep-alive learned per
application from the histogram of its idle times (pre-warm at its head, keep alive to its
tail) beats one fixed keep-alive for all: fewer cold starts for less memory held idle.

The setting (configs/reproductions/shahrad-atc20*.toml, each value's source beside it):
the bundled sample of the Azure Functions 2019 trace, each application its own model, on
a cluster wide enough that nothing but the keep-alive decides a cold start; fixed
keep-alives of 5 to 120 minutes and the hybrid histogram policy over ranges of 1 to 4
hours. Per policy, the 3rd quartile of the applications' cold-start shares and the idle
warm GPU-seconds (wasted memory time, each application alike), normalised to the 10-minute
fixed policy's. thaw's figure: the hybrid policy's (4-hour range) cold-start quartile over
the fixed curve's at the same waste, interpolated in the waste's logarithm.
"""

from pathlib import Path

import numpy as np
import pandas as pd

import traces
from reproductions.figures import plt, save
from reproductions.verdict import CONFIGS, FUNCTIONS_SAMPLE, Reproduction
from sim.config import read_config, with_keep_alive
from sim.engine.simulator import Simulation
from sim.results.summary import scheduling_figures
from sim.spec import ClusterConfig
from thaw_kernel import seeds

CLUSTER = CONFIGS / "shahrad-atc20.cluster.toml"
INVOCATIONS = FUNCTIONS_SAMPLE / "invocations.csv"


def run(spec: dict, n_seeds: int) -> tuple[list[float], dict]:
    """Per seed, the hybrid policy's cold-start quartile over the fixed curve's at its
    waste; and every policy's (quartile, normalised waste) per seed."""
    config = read_config(CLUSTER)
    workload = spec["workload"]
    policies = [f"fixed:{s}" for s in workload["fixed_s"]]
    policies += [_hybrid(r) for r in workload["hybrid_range_s"]]
    points: dict[str, dict[str, list[float]]] = {p: {"cold": [], "waste": []} for p in policies}
    per_seed = []
    for seed in range(n_seeds):
        trace = _trace(config, workload, seed)
        measured = {p: measure(config, trace, workload["policy"], p, seed) for p in policies}
        unit = measured[_normaliser(spec["paper"]["normalise_to"], policies)][1]
        for policy, (cold, waste) in measured.items():
            points[policy]["cold"].append(cold)
            points[policy]["waste"].append(waste / unit)
        fixed = [measured[p] for p in policies if p.startswith("fixed")]
        cold, waste = measured[_hybrid(workload["headline_range_s"])]
        per_seed.append(cold / fixed_curve(fixed, waste))
    return per_seed, {"points": points}


def _hybrid(range_s: int) -> str:
    """The hybrid policy over `range_s`, falling back to a keep-alive of the range (the
    paper's standard keep-alive where the histogram is not representative)."""
    return f"histogram:range_s={range_s},fallback_s={range_s}"


def _trace(config: ClusterConfig, workload: dict, seed: int) -> pd.DataFrame:
    options = traces.Options(mapping=workload["mapping"], tokens=workload["tokens"])
    rng = seeds.rng(seed, "trace")
    return traces.read(INVOCATIONS, list(config.models), rng, options=options).frame


def measure(
    config: ClusterConfig, trace: pd.DataFrame, policy: str, keep_alive: str, seed: int
) -> tuple[float, float]:
    """(the 3rd quartile of the applications' cold-start shares, idle warm GPU-seconds):
    a request placed on an instance not yet warm is a cold start."""
    sim = Simulation(with_keep_alive(config, keep_alive), trace, policy, seeds.rng(seed, "policy"))
    sim.run()
    table = sim.table.frame()
    placed = table[table["server"] >= 0]
    shares = (placed["tier"] != "warm").groupby(placed["model"], observed=True).mean()
    waste = scheduling_figures(sim)["gpu_seconds_by_state"]["idle_warm"]
    return float(np.percentile(shares.to_numpy(), 75)), float(waste)


def _normaliser(policy: str, policies: list[str]) -> str:
    """The policy the waste is a share of, which must be among those run."""
    if policy not in policies:
        raise ValueError(f"normalise_to = {policy!r}: not among the policies run {policies}")
    return policy


def fixed_curve(fixed: list[tuple[float, float]], waste: float) -> float:
    """The fixed keep-alives' cold-start quartile at `waste`, interpolated between the two
    fixed policies around it in the logarithm of the waste (the nearest end beyond)."""
    fixed = sorted(fixed, key=lambda point: point[1])
    wastes = np.log([w for _, w in fixed])
    return float(np.interp(np.log(waste), wastes, [c for c, _ in fixed]))


def figure(details: dict, paper: dict, path: Path) -> None:
    """Cold-start quartile against normalised waste (thaw's mean over seeds): the fixed
    keep-alives as a curve, the hybrid policy's ranges as points, as the paper's
    Pareto figure draws them."""
    points = details["points"]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for kind, style in (("fixed", "o-"), ("histogram", "s--")):
        rows = sorted(
            (np.mean(v["waste"]) * 100, np.mean(v["cold"]) * 100, k)
            for k, v in points.items()
            if k.startswith(kind)
        )
        label = "fixed keep-alive" if kind == "fixed" else "hybrid histogram"
        ax.plot([r[0] for r in rows], [r[1] for r in rows], style, label=label)
        for x, y, name in rows:
            short = name.split(":")[1].split(",")[0].replace("range_s=", "")
            ax.annotate(f"{int(short) // 60} min", (x, y), fontsize=7)
    ax.set_xscale("log")
    ax.set_xlabel(f"wasted memory time, % of {paper['normalise_to']}")
    ax.set_ylabel("3rd-quartile app cold starts (%)")
    ax.set_title("Serverless in the Wild (ATC '20) setting: keep-alive frontier")
    ax.legend(fontsize=8)
    save(fig, path)


REPRODUCTION = Reproduction(spec="shahrad-atc20", run=run, figure=figure)
