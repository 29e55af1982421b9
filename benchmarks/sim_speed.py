"""How fast does thaw simulate? Requests per wall second and peak memory, for a synthetic
trace of N requests on M servers. A benchmark: it prints figures and never fails on time.

    python benchmarks/sim_speed.py --requests 100000 --servers 128 --policy locality [--json]

The synthetic trace: Poisson arrivals at `--rate-per-server` requests/s per server (so a
bigger cluster sees proportionally more load), token lengths resampled from the bundled
Azure LLM 2023 code trace, models from the default catalog by Zipf popularity. The
cluster is the default one with `--servers` servers.
"""

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

import traces
from sim import seeds
from sim.config import load_config
from sim.simulator import Simulation
from traces.popularity import assign_models


def synthetic_trace(requests: int, rate: float, models: list[str], seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    reference = traces.load(traces.default_trace(), models, rng)
    rows = rng.integers(len(reference), size=requests)
    return pd.DataFrame(
        {
            "arrival_s": np.cumsum(rng.exponential(1.0 / rate, size=requests)),
            "model": assign_models(requests, models, 1.0, rng),
            "input_tokens": reference["input_tokens"].to_numpy()[rows],
            "output_tokens": reference["output_tokens"].to_numpy()[rows],
        }
    )


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def measure(
    requests: int, servers: int, gpus: int, policy: str, rate_per_server: float, seed: int
) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cluster.toml"
        path.write_text(f"[[servers]]\ncount = {servers}\ngpus = {gpus}\n")
        config = load_config(path)
    trace = synthetic_trace(requests, rate_per_server * servers, list(config.models), seed)
    rss_before = peak_rss_bytes()
    sim = Simulation(config, trace, policy, seeds.rng(seed, "policy"))
    started = time.perf_counter()
    sim.run()
    wall = time.perf_counter() - started
    frame = sim.table.frame()
    rss_after = peak_rss_bytes()
    done = frame["status"] == "done"
    return {
        "requests": requests,
        "servers": servers,
        "policy": policy,
        "wall_s": wall,
        "requests_per_wall_s": requests / wall,
        "events_per_request": sim.clock.fired / requests,
        "peak_rss_bytes": rss_after,
        "peak_rss_growth_per_request_bytes": (rss_after - rss_before) / requests,
        "simulated_s": sim.clock.now,
        "ttft_p99_s": float(frame.loc[done, "ttft_s"].quantile(0.99)),
        "loads_by_tier": sim.loads_by_tier,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--servers", type=int, default=16)
    parser.add_argument("--policy", default="locality")
    parser.add_argument("--rate-per-server", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    result = measure(args.requests, args.servers, args.policy, args.rate_per_server, args.seed)
    if args.json:
        json.dump(result, sys.stdout)
        print()
        return
    print(
        f"{result['policy']}: {result['requests']:,} requests on {result['servers']} servers "
        f"in {result['wall_s']:.2f} s wall = {result['requests_per_wall_s']:,.0f} requests/s, "
        f"{result['events_per_request']:.2f} events/request; peak RSS "
        f"{result['peak_rss_bytes'] / 2**20:,.0f} MiB "
        f"(+{result['peak_rss_growth_per_request_bytes']:,.0f} B/request during the run)"
    )


if __name__ == "__main__":
    main()
