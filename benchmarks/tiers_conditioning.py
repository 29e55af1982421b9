"""Which settings of the tiers validation can be validated at all, asked of the simulator
alone.

    python benchmarks/tiers_conditioning.py [--keep-alive 0,1] [--rate 0.75]
        [--store 300MB/s,450MB/s] [--checkpoints 2,1.5,1 3,2,1] [--seeds 4]
        [--profile FILE ...] [--json]

Each setting is the `tiers` scenario of `python -m calibration.validate --quick`
(`calibration/validate/scenario.py`) with its keep-alive, request rate, remote store's
rate and checkpoint sizes (GB, in catalog order; the DRAM and SSD caches sized to them
as the scenario sizes its own, `tiers_sized`) replaced. For each setting and policy, over
the traces of seeds 0 to `--seeds` - 1 and the measured profiles given (by default the one
bundled for this VM), it prints the medians of:

- `moves pNN`: how far the simulator's own percentile moves when every speed of the
  profile is 5% faster or slower (`calibration.validate.conditioning`). A percentile
  that moves a fifth for that cannot be checked within a tenth against a real replay
  whose inputs are measured to a few percent;
- `loading`: the share of the cold TTFT spent loading (`load_share_sim`), which a
  load-dominated scenario needs at 0.6 or more in the real replay (whose share came out
  up to 0.10 below the simulator's and at most 0.02 above it in the held-out runs of
  docs/calibration.md);
- `remote`: the share of requests served by instances loading from the store;

and the traces' median span in seconds (a quick run replays one once per policy). No
real replay runs: a setting is chosen by these figures before any replay in it. Each
profile's network rate is moved to the store's rate at the goodput the profile measured.
Simulations only: the figures do not depend on the machine that runs it.
"""

import argparse
import copy
import dataclasses
import itertools
import json
import math
import statistics
import tempfile
from pathlib import Path

import numpy as np

from calibration.validate import scenario as tiers
from calibration.validate.compare import simulate
from calibration.validate.conditioning import sensitivities
from calibration.validate.loads import load_share_sim
from sim.config.profile import read_profile
from thaw_kernel.command_line import Parser
from thaw_kernel.command_line import run as run_cli
from thaw_kernel.errors import InputError
from thaw_kernel.units import parse_bandwidth

POLICIES = ("random", "locality", "startup-aware")
PROFILE = Path(__file__).resolve().parents[1] / "calibration/profiles/dev-vm-tiers.json"
FIGURES = ("p50_move", "p90_move", "p99_move", "load_share", "remote_share")


def main(argv: list[str] | None = None) -> int:
    parser = Parser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep-alive", type=_floats, default=[0.0, 1.0], help="seconds")
    parser.add_argument("--rate", type=_floats, default=[0.75], help="requests/s")
    parser.add_argument("--store", type=_rates, default=[300e6, 450e6, 600e6])
    parser.add_argument(
        "--checkpoints",
        type=_sizes,
        nargs="+",
        default=[tiers.TIERS_QUICK.checkpoint_bytes],
        help="GB each, in catalog order: one triple a setting",
    )
    parser.add_argument("--seeds", type=int, default=4, help="training traces, seeds 0..N-1")
    parser.add_argument("--profile", type=Path, nargs="+", default=[PROFILE])
    parser.add_argument("--json", action="store_true", help="one JSON list, a row a cell")
    args = parser.parse_args(argv)
    for name, values, positive in (
        ("--keep-alive", args.keep_alive, False),
        ("--rate", args.rate, True),
        ("--store", args.store, True),
    ):
        if not all(math.isfinite(v) and (v > 0 if positive else v >= 0) for v in values):
            wanted = "positive numbers" if positive else "numbers of at least 0"
            raise InputError(f"{name}: expected {wanted}, got {values}")
    if args.seeds < 1:
        raise InputError(f"--seeds: expected at least 1, got {args.seeds}")
    measured = [_measured(profile) for profile in args.profile]  # all checked before any run
    cells = []
    for sizes, keep_alive, rate, store in itertools.product(
        args.checkpoints, args.keep_alive, args.rate, args.store
    ):
        setting = dataclasses.replace(
            tiers.TIERS_QUICK,
            keep_alive_s=keep_alive,
            rate=rate,
            remote_rate=store,
            **tiers.tiers_sized(sizes),
        )
        rows, span = _evaluate(setting, measured, range(args.seeds))
        for policy in POLICIES:
            figures = np.median(np.array(rows[policy]), axis=0)
            cells.append(
                {"checkpoint_bytes": list(sizes), "keep_alive_s": keep_alive, "rate": rate}
                | {"store_bytes_per_s": store, "policy": policy, "span_s": span}
                | dict(zip(FIGURES, map(float, figures), strict=True))
            )
    if args.json:
        print(json.dumps(cells, indent=2))
    else:
        print(f"medians over seeds 0-{args.seeds - 1} x {len(args.profile)} profile(s)")
        print(_table(cells))
    return 0


def _table(cells: list[dict]) -> str:
    lines = [f"{'setting':<46} {'policy':<14} moves p50   p90   p99  loading remote  span"]
    for c in cells:
        name = ",".join(f"{b / tiers.GB:g}" for b in c["checkpoint_bytes"]) + " GB, "
        name += f"keep-alive {c['keep_alive_s']:g} s, {c['rate']:g}/s, "
        name += f"{c['store_bytes_per_s'] / 1e6:.0f} MB/s"
        moves = " ".join(f"{100 * c[f'p{q}_move']:4.1f}%" for q in (50, 90, 99))
        shares = f"{c['load_share']:.2f}    {c['remote_share']:.2f}"
        lines.append(f"{name:<46} {c['policy']:<14} {moves}  {shares}  {c['span_s']:4.0f} s")
    return "\n".join(lines)


def _evaluate(
    setting: tiers.Scenario, measured: list[dict], seeds: range
) -> tuple[dict[str, list[tuple[float, ...]]], float]:
    """Per policy, one row per seed and profile: p50, p90 and p99 moves, the loading
    share and the remote share; and the traces' median span."""
    rows: dict[str, list[tuple[float, ...]]] = {policy: [] for policy in POLICIES}
    spans = []
    with tempfile.TemporaryDirectory() as work:
        layout = tiers.Layout(Path(work), Path(work))
        sizes = dict(zip(tiers.MODELS, setting.checkpoint_bytes, strict=True))
        tiers.write_cluster(setting, layout, sizes)
        moved = [
            _at_store_rate(document, setting.remote_rate, layout.work / f"profile-{k}.json")
            for k, document in enumerate(measured)  # two runs' profiles may share a name
        ]
        for seed in seeds:
            spans.append(float(tiers.write_trace(setting, layout, seed)["arrival_s"].max()))
            for (profile, warmup_s), policy in itertools.product(moved, POLICIES):
                requests, instances = simulate(layout, profile, policy, seed)
                ttft = requests["ttft_s"].to_numpy()
                moves = sensitivities(layout, profile, policy, seed, ttft)
                rows[policy].append(
                    (
                        *(moves[f"ttft_p{q}_sensitivity"] for q in (50, 90, 99)),
                        _or_nan(load_share_sim(requests, instances, warmup_s, setting.store)),
                        float((requests["tier"] == "remote").mean()),
                    )
                )
    return rows, statistics.median(spans)


def _at_store_rate(document: dict, rate: float, out: Path) -> tuple[Path, float]:
    """The profile `document` written to `out` with its network rate at `rate` times the
    goodput it measured against the store's pace then; and its warm-up."""
    document = copy.deepcopy(document)
    derived = document["derived"]
    derived["network_bytes_per_s"] *= (
        rate / document["machine"]["settings"]["remote_rate_bytes_per_s"]
    )
    out.write_text(json.dumps(document))
    return out, derived.get("warmup_s", 0.0)


def _measured(profile: Path) -> dict:
    """The profile at `profile`, read once; one without a store's pace (measured without
    `--remote-rate`) is refused."""
    derived, _ = read_profile(profile)  # names the file if it is not a profile
    document = json.loads(profile.read_text(encoding="utf-8-sig"))
    paced = document.get("machine", {}).get("settings", {}).get("remote_rate_bytes_per_s")
    if "network_bytes_per_s" not in derived or not _positive(paced):
        raise InputError(
            f"{profile}: no remote store measured (run calibration.measure with --remote-rate)"
        )
    return document


def _positive(value: object) -> bool:
    return isinstance(value, int | float) and math.isfinite(value) and value > 0


def _or_nan(share: float | None) -> float:
    return float("nan") if share is None else share


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",")]


def _sizes(text: str) -> tuple[int, ...]:
    """Three checkpoint sizes in GB whose caches `tiers_sized` can build."""
    try:
        sizes = tuple(round(float(x) * tiers.GB) for x in text.split(","))
        if len(sizes) != len(tiers.MODELS) or min(sizes) <= 0:
            raise ValueError(f"expected {len(tiers.MODELS)} positive sizes")
        tiers.tiers_sized(sizes)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"{text!r}: {err}") from None
    return sizes


def _rates(text: str) -> list[float]:
    try:
        return [parse_bandwidth(x) for x in text.split(",")]
    except InputError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


if __name__ == "__main__":
    raise SystemExit(run_cli("tiers_conditioning.py", main))
