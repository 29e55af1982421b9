"""How fast does thaw simulate, and how does that scale? A benchmark: it prints figures and
never fails on time.

    python benchmarks/sim_speed.py [--requests 10000,100000] [--servers 16,128,1024]
        [--models 10,1000,100000] [--trace-models K] [--policies locality,startup-aware]
        [--gpus 8] [--rate-per-server 0.5] [--peer] [--sleep] [--ewl] [--json]
        [--rounds N] [--against REV]

Each cell of the matrix (requests x servers x models x policy) runs in a fresh process, so
peak memory is the cell's own. The workload: a synthetic trace (`traces.generate`:
Poisson arrivals at `--rate-per-server` requests/s per server, so a bigger cluster sees
proportionally more load; token lengths resampled from the bundled Azure LLM 2023 code
trace; models by Zipf popularity over the catalog), on the default cluster with
`--servers` servers of `--gpus` GPUs and the default catalog, or with `--models`, a
generated hub of that many models of the bundled catalog's sizes (`[catalog]`,
docs/configuration.md#generated-catalogs; not with `--ewl`). A bigger catalog drawn by the
same Zipf is a different workload, mostly cold starts; `--trace-models K` keeps the
requests and grows only the catalog: the trace asks for the catalog's K most popular
models, whose sizes and SSD copies are the same in every catalog of at least K. The
runs then differ only where the rest of the catalog fills the SSDs, so that a download
must evict to stay; what grows with the catalog is the cost. `--peer`: with peer loading
on, its default links (docs/peer-loading.md); `--sleep`: idle engines sleep at level 1,
keeping 2 GiB a GPU, for up to 600 s after the keep-alive; `--ewl`: every model of the
catalog on an engine of the default start-up, the fixed `instance_startup_s` then the
load, that executes while loading (docs/sleep-and-overlap.md). Printed per cell:
simulated requests per wall second, events per request, and peak resident memory beyond
the trace's own columns, per request; then, per policy and request count, the per-request
cost at each cluster size relative to the smallest, and at each catalog size relative to
the smallest (flat is 1.0). `--rounds N` runs each cell N times and reports the median
speed; `--against REV` also runs each round of each cell, right after this tree's, at git
revision REV (`benchmarks/revision.py`), and prints the revision's figures beside and the
speed-up: two versions of the code compared in one session, as a shared machine's
figures demand.
"""

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import tomli_w
from revision import RevisionError, checked_out

import traces
from sim.config import read_config
from sim.engine.simulator import Simulation
from thaw_kernel import seeds
from thaw_kernel.toml_file import default_cluster
from traces.generate import synthesize

SLEEP = {"level": 1, "gpu_memory": "2GiB"}  # as benchmarks/mechanisms.py
EWL = "ewl"  # the engine `--ewl` puts every model on


def peak_rss_bytes() -> int:
    """This process's peak resident memory (Linux: VmHWM)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def cluster(
    servers: int, gpus: int, peer: bool, sleep: bool, ewl: bool, models: int | None = None
) -> dict:
    """The cluster file of a cell: the default cluster, `servers` servers of `gpus` GPUs,
    a generated catalog of `models` models (None: the default catalog), with the
    mechanisms switched on."""
    table: dict = {"servers": [{"count": servers, "gpus": gpus}]}
    if models is not None:
        table["catalog"] = {"models": models}
    if peer:
        table["peer_loading"] = True
    if sleep:
        table |= {"keep_alive": "fixed:sleep=600", "sleep": dict(SLEEP)}
    if ewl:
        defaults = default_cluster()
        stages = [{"name": "startup", "seconds": defaults["instance_startup_s"]}, {"name": "load"}]
        table["engines"] = {EWL: {"stages": stages, "execute_while_load": True}}
        table["models"] = {m: {**spec, "engine": EWL} for m, spec in defaults["models"].items()}
    return table


def measure(
    requests: int,
    servers: int,
    gpus: int,
    policy: str,
    rate: float,
    seed: int,
    peer: bool = False,
    sleep: bool = False,
    ewl: bool = False,
    models: int | None = None,
    trace_models: int | None = None,
) -> dict:
    """One cell, in this process."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cluster.toml"
        path.write_text(tomli_w.dumps(cluster(servers, gpus, peer, sleep, ewl, models)))
        config = read_config(path)
    trace = synthesize(
        np.random.default_rng(seed),
        list(config.models)[:trace_models],
        rate=rate * servers,
        count=requests,
        reference=traces.reference_tokens,
    )
    trace_bytes = int(trace.memory_usage(deep=True).sum())
    before = peak_rss_bytes()
    sim = Simulation(config, trace, policy, seeds.rng(seed, "policy"))
    started = time.perf_counter()
    sim.run()
    wall = time.perf_counter() - started
    peak = peak_rss_bytes()
    return {
        "requests": requests,
        "servers": servers,
        "models": len(config.models),
        "trace_models": trace["model"].nunique(),
        "gpus_per_server": gpus,
        "policy": policy,
        "mechanisms": [name for name, on in (("peer", peer), ("sleep", sleep), ("ewl", ewl)) if on],
        "wall_s": wall,
        "requests_per_wall_s": requests / wall,
        "events_per_request": sim.clock.fired / requests,
        "trace_bytes": trace_bytes,
        "peak_rss_bytes": peak,
        "rss_growth_per_request_bytes": (peak - before) / requests,
        "ttft_p99_s": float(np.percentile(sim.table.ttft_s, 99)),
        "migrations": sim.migrations,
        "loads_by_tier": {str(tier): n for tier, n in sim.loads_by_tier.items()},
        "wakes": sum(sim.sleepers.wakes.values()) if sim.sleepers is not None else 0,
    }


def measure_in_child(
    requests: int,
    servers: int,
    gpus: int,
    policy: str,
    rate: float,
    peer: bool,
    sleep: bool,
    ewl: bool,
    models: int | None,
    trace_models: int | None,
    tree: Path | None = None,
) -> dict:
    """One cell in a fresh interpreter, so its peak memory is its own; with `tree`, that
    checkout's code and benchmark run it."""
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import sim_speed; "
        "print(json.dumps(sim_speed.measure(*json.loads(sys.argv[2]))))"
    )
    args = json.dumps(
        [requests, servers, gpus, policy, rate, 0, peer, sleep, ewl, models, trace_models]
    )
    root = tree or Path(__file__).resolve().parent.parent
    path = os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))
    out = subprocess.run(
        [sys.executable, "-c", code, str(root / "benchmarks"), args],
        check=True,
        capture_output=True,
        text=True,
        cwd=root,
        env=os.environ | {"PYTHONPATH": path},
    )
    return json.loads(out.stdout)


def measure_rounds(cell: tuple, rounds: int, against: tuple[str, Path, str] | None) -> dict:
    """`cell` (`measure_in_child`'s arguments) `rounds` times, each round at this tree and
    then, with `against` (revision, worktree, commit), at that revision. The cell's speed
    is the median over its rounds, and its `against` holds the revision's."""
    here: list[dict] = []
    there: list[dict] = []
    for _ in range(rounds):
        here.append(measure_in_child(*cell))
        if against is not None:
            there.append(_measure_at(cell, *against))
    result = _median_of(here)
    if against is not None:
        revision, _, commit = against
        theirs = _median_of(there)
        result["against"] = {
            "revision": revision,
            "commit": commit,
            **{key: theirs[key] for key in _COMPARED},
            "speedup": result["requests_per_wall_s"] / theirs["requests_per_wall_s"],
        }
    return result


def _measure_at(cell: tuple, revision: str, tree: Path, commit: str) -> dict:
    """`cell` run by the revision's worktree; its failure there is one line."""
    try:
        return measure_in_child(*cell, tree=tree)
    except subprocess.CalledProcessError as err:
        lines = err.stderr.strip().splitlines() or ["no output"]
        raise RevisionError(
            f"{revision} ({commit[:12]}): its benchmarks/sim_speed.py failed on this cell: "
            f"{lines[-1]}"
        ) from None


# What `--against` reports of the revision's runs: its speed, and whether it simulated
# the same work.
_COMPARED = (
    "requests_per_wall_s",
    "round_requests_per_wall_s",
    "events_per_request",
    "ttft_p99_s",
    "rss_growth_per_request_bytes",
)


def _median_of(runs: list[dict]) -> dict:
    """The first run's figures, with the median speed over all of them."""
    speeds = [run["requests_per_wall_s"] for run in runs]
    speed = statistics.median(speeds)
    first = runs[0]
    return first | {
        "requests_per_wall_s": speed,
        "wall_s": first["requests"] / speed,
        "round_requests_per_wall_s": speeds,
    }


def scaling(cells: list[dict], axis: str) -> list[dict]:
    """Wall time per request at each value of `axis` ("servers" or "models"), over its
    smallest value's, among cells alike in everything else."""
    others = [key for key in ("policy", "requests", "servers", "models") if key != axis]
    rows: dict[tuple, list[dict]] = {}
    for cell in cells:
        rows.setdefault(tuple(cell[key] for key in others), []).append(cell)
    ratios = []
    for row in rows.values():
        row.sort(key=lambda c: c[axis])
        base = row[0]["wall_s"] / row[0]["requests"]
        ratios += [
            {
                **{key: c[key] for key in others},
                "axis": axis,
                axis: c[axis],
                "cost_ratio": c["wall_s"] / c["requests"] / base,
            }
            for c in row[1:]
        ]
    return ratios


def run_cells(args: argparse.Namespace, against: tuple[str, Path, str] | None) -> list[dict]:
    """Every cell of the matrix, each printed as it ends unless `--json`."""
    cells = []
    for policy, requests, servers, models in itertools.product(
        args.policies.split(","), args.requests, args.servers, args.models
    ):
        cell = measure_rounds(
            (
                requests,
                servers,
                args.gpus,
                policy,
                args.rate_per_server,
                args.peer,
                args.sleep,
                args.ewl,
                models,
                args.trace_models,
            ),
            args.rounds,
            against,
        )
        cells.append(cell)
        if not args.json:
            print(_line(cell), flush=True)
    return cells


def _line(cell: dict) -> str:
    line = (
        f"{cell['policy']:>14} {cell['requests']:>9,} requests {cell['servers']:>5} servers "
        f"{cell['models']:>7,} models ({cell['trace_models']:,} requested): "
        f"{cell['requests_per_wall_s']:>8,.0f} requests/s, "
        f"{cell['events_per_request']:.2f} events/request, "
        f"{cell['rss_growth_per_request_bytes']:,.0f} B/request"
    )
    if len(cell["round_requests_per_wall_s"]) > 1:
        line += f" (median of {_spread(cell['round_requests_per_wall_s'])})"
    theirs = cell.get("against")
    if theirs is not None:
        line += (
            f"; at {theirs['revision']}: {theirs['requests_per_wall_s']:,.0f} requests/s "
            f"({_spread(theirs['round_requests_per_wall_s'])}), "
            f"{theirs['events_per_request']:.2f} events/request: {theirs['speedup']:.2f}x"
        )
    return line


def _spread(speeds: list[float]) -> str:
    return f"{min(speeds):,.0f}-{max(speeds):,.0f}" if len(speeds) > 1 else f"{speeds[0]:,.0f}"


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=_ints, default=[10_000, 100_000])
    parser.add_argument("--servers", type=_ints, default=[16, 128, 1024])
    parser.add_argument("--policies", default="locality,startup-aware")
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--rate-per-server", type=float, default=0.5)
    parser.add_argument("--peer", action="store_true", help="with peer loading on")
    parser.add_argument("--sleep", action="store_true", help="with sleeping engines on")
    parser.add_argument("--ewl", action="store_true", help="with execute-while-load on")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--models", type=_ints, default=[None], help="generated catalogs of these many models"
    )
    parser.add_argument(
        "--trace-models",
        type=int,
        help="the trace requests only the catalog's K most popular models (default: all)",
    )
    parser.add_argument(
        "--rounds", type=int, default=1, help="runs of each cell; it reports their median"
    )
    parser.add_argument(
        "--against",
        metavar="REV",
        help="also run every cell at git revision REV (a worktree beside this one), each "
        "round right after this tree's, and print the speed-up",
    )
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error(f"--rounds: expected a positive integer, got {args.rounds}")
    if args.trace_models is not None:
        sizes = [len(default_cluster()["models"]) if m is None else m for m in args.models]
        if not 1 <= args.trace_models <= min(sizes):
            parser.error(f"--trace-models: expected 1 to {min(sizes)}, the smallest catalog")
    if args.ewl and args.models != [None]:
        parser.error("--ewl puts the default catalog's models on an engine: not with --models")
    try:
        with checked_out(args.against) if args.against else nullcontext() as revision:
            against = (args.against, *revision) if revision else None
            cells = run_cells(args, against)
    except RevisionError as err:
        print(f"sim_speed.py: --against: {err}", file=sys.stderr)
        sys.exit(2)
    ratios = scaling(cells, "servers") + scaling(cells, "models")
    if args.json:
        json.dump({"cells": cells, "scaling": ratios}, sys.stdout)
        print()
        return
    for r in ratios:
        where = {"servers": "cluster's", "models": "catalog's"}[r["axis"]]
        print(
            f"{r['policy']:>14} {r['requests']:>9,} requests: cost per request at "
            f"{r[r['axis']]:,} {r['axis']} = {r['cost_ratio']:.2f}x the smallest {where}"
        )


if __name__ == "__main__":
    main()
