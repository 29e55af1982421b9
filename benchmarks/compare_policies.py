"""Compare policies on one trace and cluster over several seeds: median TTFT percentiles.

    python benchmarks/compare_policies.py [--policies random,locality] [--seeds 10]
        [--trace PATH] [--cluster FILE.toml]

Each seed redraws the models assigned to the trace's requests and the policy's random
choices (the same draws for every policy). Single-seed p99s of a bursty trace are noisy,
so the table shows medians over seeds and how many seeds each policy won at p99.
"""

import argparse
import statistics
from pathlib import Path

import sim
import traces
from sim.config import read_config
from thaw_kernel.tiers import LOAD_TIERS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--policies", default="random,locality")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--trace", default=None)
    parser.add_argument("--cluster", default=None)
    args = parser.parse_args()
    config = read_config(args.cluster)
    trace_path = Path(args.trace) if args.trace else traces.default_trace()
    policies = args.policies.split(",")
    results = {
        p: [sim.run(p, trace_path, config, s).summary for s in range(args.seeds)] for p in policies
    }
    p99 = {p: [r["ttft_p99_s"] for r in runs] for p, runs in results.items()}
    best = [min(policies, key=lambda p, s=s: p99[p][s]) for s in range(args.seeds)]
    print(f"{args.seeds} seeds; medians over seeds")
    print("| policy | TTFT p50 (s) | TTFT p90 (s) | TTFT p99 (s) | loads dram/ssd/remote/peer "
          "(mean) | migrations | preemptions | GPU-seconds | best p99 in |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for policy, runs in results.items():
        med = {k: statistics.median(r[k] for r in runs) for k in
               ("ttft_p50_s", "ttft_p90_s", "ttft_p99_s", "gpu_seconds",
                "migrations", "preemptions")}  # fmt: skip
        loads = "/".join(
            f"{statistics.mean(r['loads_by_tier'][t] for r in runs):.0f}" for t in LOAD_TIERS
        )
        print(
            f"| {policy} | {med['ttft_p50_s']:.2f} | {med['ttft_p90_s']:.2f} | "
            f"{med['ttft_p99_s']:.1f} | {loads} | {med['migrations']:.0f} | "
            f"{med['preemptions']:.0f} | {med['gpu_seconds']:,.0f} | "
            f"{best.count(policy)}/{args.seeds} seeds |"
        )


if __name__ == "__main__":
    main()
