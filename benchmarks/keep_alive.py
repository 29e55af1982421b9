"""Keep-alive policies on real serverless arrivals: cold starts against GPU time held.

    python benchmarks/keep_alive.py [--fixed 0,60,300,600,1200] [--scale 0.05]
        [--cluster FILE.toml] [--policy locality] [--seed 0]
        [--figure docs/figures/keep_alive_tradeoff.png]

The workload: the bundled sample of the Azure Functions 2019 trace (Shahrad et al.,
USENIX ATC '20; 100 functions, 8 hours), each function's invocations serving a model of
the catalog as `python -m sim run --trace` maps them (`stripe`), invocation counts
multiplied by `--scale` (randomised rounding), token lengths drawn from the bundled LLM
trace. Each keep-alive policy replays the same requests: fixed keep-alives of several
lengths, then `histogram` (also with a 10-minute fallback window instead of 4 hours)
and `greedy-dual` (`--policies` lists those). Printed per policy: the cold-start ratio
(share of requests that waited for an instance to start), GPU-seconds in all and idle
warm, pre-warms, and TTFT p99; the figure plots the cold-start ratio against idle-warm
GPU-seconds, the trade-off curve of Shahrad et al.'s Figure 15. A benchmark: it prints
figures and asserts nothing.
"""

import argparse
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

import traces
from sim.config import read_config, with_keep_alive
from sim.engine.simulator import Simulation
from sim.results.summary import scheduling_figures
from thaw_kernel import seeds
from thaw_kernel.publish import write_file_atomically

ROOT = Path(__file__).resolve().parent.parent
FIGURE = "keep_alive_tradeoff.png"
SAMPLE = ROOT / "tests" / "data" / "traces" / "azure-functions-2019-sample" / "invocations.csv"


def measure(config, trace, policy: str, keep_alive: str, seed: int) -> dict:
    sim = Simulation(with_keep_alive(config, keep_alive), trace, policy, seeds.rng(seed, "policy"))
    sim.run()
    figures = scheduling_figures(sim)
    return {
        "keep_alive": keep_alive,
        "cold_start_ratio": figures["cold_start_ratio"],
        "gpu_seconds": sim.cluster.gpu_seconds,
        "idle_gpu_seconds": figures["gpu_seconds_by_state"]["idle_warm"],
        "prewarms": sim.prewarms,
        "prewarm_hits": sim.prewarm_hits,
        "ttft_p99_s": float(np.percentile(sim.table.ttft_s, 99)),
        "wall_s": sim.wall_s,
    }


def plot(rows: list[dict], path: Path, title: str) -> None:
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    fixed = [r for r in rows if r["keep_alive"].startswith("fixed")]
    ax.plot(
        [r["idle_gpu_seconds"] / 3600 for r in fixed],
        [100 * r["cold_start_ratio"] for r in fixed],
        "o-",
        color="#636363",
        label="fixed keep-alive",
    )
    for r in fixed:
        ax.annotate(
            r["keep_alive"].split(":")[1] + " s",
            (r["idle_gpu_seconds"] / 3600, 100 * r["cold_start_ratio"]),
            textcoords="offset points",
            xytext=(5, 4),
            fontsize=8,
        )
    for r, marker, colour in zip(
        [r for r in rows if not r["keep_alive"].startswith("fixed")],
        ["s", "^", "D", "v"],
        ["#e6550d", "#3182bd", "#31a354", "#756bb1"],
        strict=False,
    ):
        ax.plot(
            r["idle_gpu_seconds"] / 3600,
            100 * r["cold_start_ratio"],
            marker,
            color=colour,
            markersize=8,
            label=r["keep_alive"],
        )
    ax.set_yscale("symlog", linthresh=0.1)
    ax.set_xlabel("idle warm GPU-hours (held, serving nothing)")
    ax.set_ylabel("cold-start ratio (% of requests, log scale)")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    write_file_atomically(path, lambda p: fig.savefig(p, format="png", dpi=120))
    plt.close(fig)


def _seconds(text: str) -> list[float]:
    return [float(x) for x in text.split(",")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fixed", type=_seconds, default=[0, 60, 300, 600, 1200])
    parser.add_argument("--policies", default="histogram,histogram:fallback_s=600,greedy-dual")
    parser.add_argument("--scale", type=float, default=0.05)
    parser.add_argument("--cluster", default=None)
    parser.add_argument("--policy", default="locality")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--figure", type=Path, default=ROOT / "docs" / "figures" / FIGURE)
    args = parser.parse_args()
    config = read_config(args.cluster)
    started = time.perf_counter()
    trace = traces.read(
        SAMPLE,
        list(config.models),
        seeds.rng(args.seed, "trace"),
        config.zipf_exponent,
        options=traces.Options(scale=args.scale),
    ).frame
    print(
        f"{len(trace):,} requests over {trace['arrival_s'].iloc[-1] / 3600:.1f} h "
        f"(Azure Functions 2019 sample x {args.scale:g}), {config.server_count} servers, "
        f"policy {args.policy}, seed {args.seed}; loaded in {time.perf_counter() - started:.1f} s"
    )
    specs = [f"fixed:{s:g}" for s in args.fixed] + args.policies.split(",")
    print("| keep-alive | cold starts | GPU-s | idle warm GPU-s | pre-warms (hits) | "
          "TTFT p99 (s) | wall (s) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    rows = []
    for spec in specs:
        r = measure(config, trace, args.policy, spec, args.seed)
        rows.append(r)
        print(
            f"| {spec} | {100 * r['cold_start_ratio']:.2f}% | {r['gpu_seconds']:,.0f} | "
            f"{r['idle_gpu_seconds']:,.0f} | {r['prewarms']} ({r['prewarm_hits']}) | "
            f"{r['ttft_p99_s']:.2f} | {r['wall_s']:.1f} |",
            flush=True,
        )
    title = (
        f"Azure Functions 2019 sample x {args.scale:g}: {len(trace):,} requests, "
        f"{config.server_count} servers, {args.policy}, seed {args.seed}"
    )
    plot(rows, args.figure, title)
    print(f"figure: {args.figure}")


if __name__ == "__main__":
    main()
