"""ServerlessLLM against the mechanisms that came after it, side by side on one bursty
trace: peer loading with multicast chains, execute-while-load, sleeping engines, the first
two together (λScale's pair) and all three (docs/mechanisms.md).

    python benchmarks/mechanisms.py [--seeds 5] [--cluster configs/mechanisms.toml]
        [--policy startup-aware] [--trace FILE] [--window START:END] [--scale X]
        [--out FILE.md]

Each setting replays the same requests per seed (the trace's draws and the policy's come
from their own streams of the seed): the cluster file alone is ServerlessLLM's setting
(loads from DRAM, SSD or the remote store); the others add `peer_loading = true`,
`execute_while_load = true` on every engine, or a `sleep` table with the keep-alive's
`sleep=` option (docs/peer-loading.md, docs/sleep-and-overlap.md). Printed: a markdown
table of TTFT p50 and p99 and GPU-seconds (mean over seeds, bootstrap 95% interval over
seeds), cold-start loads by source and wakes (mean over seeds). A benchmark: it prints
figures and asserts nothing.
"""

import copy
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import tomli_w

import traces
from analysis.stats import bootstrap_ci
from sim.api import run
from sim.config import read_config
from thaw_kernel.command_line import Parser
from thaw_kernel.command_line import run as run_cli
from thaw_kernel.errors import InputError
from thaw_kernel.publish import write_file_atomically
from thaw_kernel.toml_file import read_toml
from traces.options import add_trace_options, trace_options

ROOT = Path(__file__).resolve().parent.parent
CLUSTER = ROOT / "configs" / "mechanisms.toml"
SLEEP = {"level": 1, "gpu_memory": "2GiB"}  # vLLM sleep level 1; the page's example size
SLEEP_KEEP_ALIVE = "sleep=600"  # added to the cluster's keep-alive: asleep up to 10 min
SOURCES = ("dram", "ssd", "remote", "peer")
COLUMNS = (
    "setting",
    "TTFT p50 (s)",
    "TTFT p99 (s)",
    "GPU-s",
    *(f"loads {source}" for source in SOURCES),
    "wakes",
)


def _peer(table: dict) -> None:
    table["peer_loading"] = True


def _overlap(table: dict) -> None:
    for engine in table.get("engines", {}).values():
        engine["execute_while_load"] = True


def _sleep(table: dict) -> None:
    table["sleep"] = dict(SLEEP)
    keep_alive = table.get("keep_alive", "fixed")
    table["keep_alive"] = f"{keep_alive}{',' if ':' in keep_alive else ':'}{SLEEP_KEEP_ALIVE}"


SETTINGS: dict[str, tuple[Callable[[dict], None], ...]] = {
    "ServerlessLLM": (),
    "+ peer multicast": (_peer,),
    "+ execute-while-load": (_overlap,),
    "+ sleeping engines": (_sleep,),
    "+ peer and execute-while-load": (_peer, _overlap),
    "all together": (_peer, _overlap, _sleep),
}


def variant(base: dict, switches: tuple[Callable[[dict], None], ...], directory: Path):
    """The configuration `base` (a cluster file's table) with `switches` applied."""
    table = copy.deepcopy(base)
    for switch in switches:
        switch(table)
    path = directory / "cluster.toml"
    path.write_text(tomli_w.dumps(table))
    return read_config(path)


def measure(config, policy: str, seed: int, options: traces.Options, trace: Path | None) -> dict:
    """One run's figures, from its summary."""
    summary = run(policy, trace, config, seed, trace_options=options).summary
    return {
        "ttft_p50_s": summary["ttft_p50_s"],
        "ttft_p99_s": summary["ttft_p99_s"],
        "gpu_seconds": summary["gpu_seconds"],
        **{source: summary["loads_by_tier"][source] for source in SOURCES},
        "wakes": summary["wakes"],
        "requests": summary["requests"],
    }


def _with_ci(values: list[float], digits: int) -> str:
    estimate, low, high = bootstrap_ci(values)
    if np.isnan(low):
        return f"{estimate:,.{digits}f}"
    return f"{estimate:,.{digits}f} ({low:,.{digits}f}-{high:,.{digits}f})"


def table(rows: dict[str, list[dict]]) -> str:
    """The markdown table: one row per setting, its runs' figures over seeds."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for name, runs in rows.items():
        cells = [
            name,
            _with_ci([r["ttft_p50_s"] for r in runs], 2),
            _with_ci([r["ttft_p99_s"] for r in runs], 1),
            _with_ci([r["gpu_seconds"] for r in runs], 0),
            *(f"{np.mean([r[source] for r in runs]):.1f}" for source in SOURCES),
            f"{np.mean([r['wakes'] for r in runs]):.1f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _seeds(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 100:
        raise InputError(f"--seeds: expected 1 to 100, got {text!r}")
    return value


def main() -> int:
    parser = Parser(prog="mechanisms.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="5", help="seeds 0..N-1 (default: 5)")
    parser.add_argument("--cluster", type=Path, default=CLUSTER)
    parser.add_argument("--policy", default="startup-aware")
    parser.add_argument("--trace", type=Path, default=None, help="default: the bundled trace")
    parser.add_argument("--out", type=Path, default=None, help="also write the table here")
    add_trace_options(parser, formats=None)
    args = parser.parse_args()
    seeds = _seeds(args.seeds)
    base = read_toml(args.cluster)
    read_config(args.cluster)  # refuse a bad cluster file by its own name
    if args.out is not None and not args.out.parent.is_dir():
        raise InputError(f"--out {args.out}: no such directory")
    options = trace_options(args)
    started = time.perf_counter()
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, switches in SETTINGS.items():
            config = variant(base, switches, Path(tmp))
            rows[name] = [
                measure(config, args.policy, seed, options, args.trace) for seed in range(seeds)
            ]
    text = table(rows)
    print(
        f"{rows['ServerlessLLM'][0]['requests']:,} requests (seed 0), {args.cluster.name}, "
        f"policy {args.policy}, seeds 0-{seeds - 1}; "
        f"{len(SETTINGS) * seeds} runs in {time.perf_counter() - started:.0f} s"
    )
    print(text, end="")
    if args.out is not None:
        write_file_atomically(args.out, lambda p: p.write_text(text))
    return 0


if __name__ == "__main__":
    sys.exit(run_cli("mechanisms.py", main))
