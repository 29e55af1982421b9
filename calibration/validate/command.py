"""`python -m calibration.validate`: the simulator's TTFT error against a real replay.

Replays a short trace for real on this machine (servers of one GPU each, sharing the
machine's GPUs in turn where it has fewer, or one CPU core each without GPUs; real
checkpoints, real cold starts through the real loader, real inference; `--scenario
tiers` adds a remote object store on loopback and makes the checkpoints large enough
that a cold start is mostly its load), then simulates the same
trace on the same cluster with the profile `calibration.measure` measured here (or
`--profile`), its start-up timed again around each replay
(`calibration.validate.reprobe`), and prints p50, p90 and p99 TTFT of both and the
signed relative error per policy, medians over `--repeats` seeds with their range, each
cold-start stage real beside simulated, and the loads by tier. `--replays` replays each
seed's trace more than once, and reports how far the real replays of one trace part: the
real side's own noise, against which the simulator's error can be read. Bad input is one
line on stderr and exit status 2; a failed measurement or replay, one line and status 1.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd

import traces
from calibration.measure.page_reporting import free_page_reporting
from calibration.remote.running import running_store
from calibration.validate import devices
from calibration.validate.beside import runtime_start_beside
from calibration.validate.compare import (
    PERCENTILES,
    errors,
    instance_phases,
    migrated,
    parts,
    rel_errors,
    simulate,
)
from calibration.validate.conditioning import rank_errors, sensitivities
from calibration.validate.footprint import Footprint
from calibration.validate.loads import (
    load_share,
    load_share_sim,
    loads_by_tier_real,
    loads_by_tier_sim,
)
from calibration.validate.out_dir import replay_folder
from calibration.validate.paired import paired_stages
from calibration.validate.reprobe import Probe, probe, reprobed
from calibration.validate.scale import compare_speeds
from calibration.validate.scenario import (
    MODELS,
    SCENARIOS,
    Layout,
    Scenario,
    decoder_bytes,
    workspace,
    write_checkpoints,
    write_cluster,
    write_trace,
)
from calibration.validate.scheduler import Replay
from calibration.validate.served import requests_by_tier
from calibration.validate.stages import STAGES, real_stages, sim_stages
from calibration.validate.summary import p99_ratios, pooled, summarize
from sim.config import read_config
from sim.config.profile import read_profile
from thaw_kernel import bounds, seeds
from thaw_kernel.command_line import Parser
from thaw_kernel.command_line import run as run_command
from thaw_kernel.errors import InputError
from thaw_kernel.publish import check_replaceable, staged_directory

PROG = "python -m calibration.validate"
KIND = "validation"
# The policies the real replay can carry out (it migrates live, but does not preempt), and
# those it runs by default.
POLICIES = ("random", "locality", "startup-aware", "migration")
DEFAULT_POLICIES = ("random", "locality", "startup-aware")
SLACK_S = 300.0  # a real replay still running this long after the trace's end has hung
MAX_REPLAYS = 10  # each replay takes minutes: more is a typo, not a measurement


def _parser() -> argparse.ArgumentParser:
    parser = Parser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument(
        "--scenario",
        choices=list(SCENARIOS),
        default="startup",
        help="startup: small checkpoints, a cold start is mostly the engine's start-up "
        "(default); tiers: 1-2 GB checkpoints over DRAM, SSD and a remote store, each "
        "server's checkpoint store reading them while the engines start; tiers-serial: "
        "the same, each engine loading its own after its start-up",
    )
    parser.add_argument("--quick", action="store_true", help="a shorter trace (CI)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--profile", type=Path, help="a profile (default: measure one now)")
    parser.add_argument("--policies", default=",".join(DEFAULT_POLICIES), help="comma-separated")
    parser.add_argument("--seed", type=int, default=0, help="fixes the trace and policy draws")
    parser.add_argument(
        "--repeats",
        type=int,
        help="replays, with seeds --seed, --seed+1, ... (default 3 with --quick of the "
        "startup scenario, else 1)",
    )
    parser.add_argument(
        "--replays",
        type=int,
        default=1,
        help="real replays of each seed's trace (default 1); with 2 or more, the report "
        "gives how far the replays of one trace differ",
    )
    parser.add_argument("--dir", type=Path, default=Path("/var/tmp"), help="disk for the SSDs")
    parser.add_argument("--out", type=Path, help="also write the report and per-request tables")
    return parser


def _policies(text: str) -> list[str]:
    names = list(dict.fromkeys(name for name in text.split(",") if name))  # once each
    for name in names:
        if name not in POLICIES:
            raise InputError(
                f"--policies: {name!r} is not one the real replay can run "
                f"(it does not preempt): choose among {', '.join(POLICIES)}"
            )
    if not names:
        raise InputError("--policies: give at least one policy")
    return names


@contextmanager
def _store(scenario: Scenario, layout: Layout) -> Iterator[str | None]:
    """The remote store over the scenario's checkpoints, for the replays' duration (none
    without a remote tier)."""
    if not scenario.remote:
        yield None
        return
    with running_store(layout.store, scenario.remote_rate) as store:
        yield store.url


def _measure(work: Path, device: str, scenario: Scenario) -> Path:
    """Run `calibration.measure` (quick, on the replay's kind of device; on checkpoints
    of the scenario's probe size, and with the remote store's rate, where it has them)
    into the work directory."""
    out = work / "profile.json"
    command = [sys.executable, "-m", "calibration.measure", "--device", device, "--quick"]
    command += ["--dir", str(work), "--out", str(out)]
    if scenario.probe_bytes:
        command += ["--size", str(scenario.probe_bytes)]
    if scenario.remote:
        command += ["--remote-rate", str(scenario.remote_rate)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"python -m calibration.measure failed: {last}")
    return out


def _validate_policy(
    scenario: Scenario,
    layout: Layout,
    sizes: dict[str, int],
    profile: Path,
    policy: str,
    seed: int,
    before: Probe,
    store_url: str | None,
) -> tuple[dict, dict[str, pd.DataFrame | bytes], Probe]:
    """The policy's report for the trace of `seed`, its files by name (real and simulated
    requests, the real instances, the profile it was predicted from) and the start-up
    probe timed right after it. The simulator's side reads only the trace, the cluster and
    the profile with its start-up timed again `before` and after the replay: nothing the
    replay measured goes into it."""
    derived, _ = read_profile(profile)
    config = read_config(layout.cluster, profile)
    trace = traces.read(layout.trace, list(MODELS), seeds.rng(seed, "trace")).frame
    limit_s = float(trace["arrival_s"].max()) + SLACK_S
    rng = seeds.rng(seed, "policy")
    replay = Replay(scenario, layout, sizes, trace, policy, rng, config, store_url)
    records = replay.run(limit_s)
    after = probe(scenario, layout)
    predicting = reprobed(profile, before, after, layout.work / f"{policy}-profile.json")
    predicted, _ = read_profile(predicting)
    warmup_s = predicted.get("warmup_s", 0.0)
    real = records.frame()
    instances = records.instances_frame()
    simulated, sim_instances = simulate(layout, predicting, policy, seed)
    real_ttft, sim_ttft = real["ttft_s"].to_numpy(), simulated["ttft_s"].to_numpy()
    real_stages_s = real_stages(records, real)
    beside = config.load_beside_startup
    sim_stages_s = sim_stages(simulated, sim_instances, predicted, config)
    files: dict[str, pd.DataFrame | bytes] = {
        f"{policy}-real.csv": real,
        f"{policy}-sim.csv": simulated,
        f"{policy}-instances.csv": instances,
        f"{policy}-sim-instances.csv": sim_instances,
        f"{policy}-profile.json": predicting.read_bytes(),
    }
    # The same prediction with the profile's start-up as measured: what drift adds.
    as_measured, _ = simulate(layout, profile, policy, seed)
    result = {
        "seed": seed,
        "requests": len(trace),
        "real_ttfts": int(np.isfinite(real_ttft).sum()),
        **errors(real_ttft, sim_ttft),
        **rank_errors(real_ttft, sim_ttft),
        **sensitivities(layout, predicting, policy, seed, sim_ttft),
        "stages": {
            stage: {"real_s": real_stages_s[stage], "sim_s": sim_stages_s[stage]}
            for stage in STAGES
        },
        "real": parts(real)
        | instance_phases(records)
        | migrated(real)
        | {"startup_probe_after_s": after.median_s},
        "sim": parts(simulated)
        | migrated(simulated)
        | {
            "instance_startup_s": predicted["instance_startup_s"],
            "profile_instance_startup_s": derived["instance_startup_s"],
        },
        "with_profile_startup": rel_errors(real_ttft, as_measured["ttft_s"].to_numpy()),
        "loads_by_tier_real": loads_by_tier_real(records),
        "loads_by_tier_sim": loads_by_tier_sim(sim_instances),
        "load_share_real": load_share(records, real),
        "load_share_sim": load_share_sim(simulated, sim_instances, warmup_s, beside),
        "requests_by_tier_real": requests_by_tier(real),
        "requests_by_tier_sim": requests_by_tier(simulated),
        "runtime_start_beside": runtime_start_beside(instances, sim_instances, warmup_s, beside),
        "paired_stages": paired_stages(instances, sim_instances, warmup_s, beside),
    }
    return result, files, after


def _repeat(
    scenario: Scenario,
    layout: Layout,
    sizes: dict[str, int],
    profile: Path,
    policies: list[str],
    seed: int,
    replay: int,
    before: Probe,
    store_url: str | None,
) -> tuple[dict[str, dict], dict[str, pd.DataFrame | bytes], Probe]:
    """Every policy on the trace of `seed`, in its `replay`-th real replay: the results by
    policy, the files to keep (the trace under `seed-N/`, each policy's files under
    `replay_folder(seed, replay)`) and the last start-up probe. Each replay's probe before is
    the one after the replay before it."""
    write_trace(scenario, layout, seed)
    results: dict[str, dict] = {}
    files: dict[str, pd.DataFrame | bytes] = {f"seed-{seed}/trace.csv": layout.trace.read_bytes()}
    for policy in policies:
        result, kept, after = _validate_policy(
            scenario, layout, sizes, profile, policy, seed, before, store_url
        )
        results[policy] = result | {"replay": replay}
        files |= {
            f"{replay_folder(seed, replay)}/{name}": content for name, content in kept.items()
        }
        before = after
    return results, files, before


def _pooled(
    files: dict[str, pd.DataFrame | bytes], policy: str, runs: list[dict]
) -> dict[str, float]:
    """`policy`'s percentiles over the requests of every run (each seed, each replay),
    from its tables."""
    folders = [replay_folder(run["seed"], run["replay"]) for run in runs]
    real, simulated = (
        [files[f"{folder}/{policy}-{side}.csv"]["ttft_s"].to_numpy() for folder in folders]
        for side in ("real", "sim")
    )
    return pooled(real, simulated)


def _check_out(out: Path | None) -> None:
    """Refuse, before minutes of replay, an `--out` that could not be written."""
    if out is None:
        return
    check_replaceable(out, KIND, "--out")


def _write_out(out: Path, report: dict, files: dict[str, pd.DataFrame | bytes]) -> None:
    """The report, every table and the simulator's inputs (so that `python -m sim run
    --trace seed-N/trace.csv --cluster cluster.toml --profile profile.json` reruns its
    side), as one directory put in place atomically."""
    with staged_directory(out, KIND) as staging:
        (staging / "report.json").write_text(json.dumps(report, indent=2) + "\n")
        for name, content in files.items():
            path = staging / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                content.to_csv(path, index=False)


class _Laps:
    """Wall seconds per phase of a run, each from the end of the one before."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._last = time.monotonic()

    def mark(self, phase: str) -> None:
        now = time.monotonic()
        self.seconds[phase] = now - self._last
        self._last = now


def _repeats(args: argparse.Namespace) -> int:
    if args.repeats is None:
        return 3 if args.quick and args.scenario == "startup" else 1
    if args.repeats < 1:
        raise InputError(f"--repeats: expected an integer >= 1, got {args.repeats}")
    return args.repeats


def _replays(args: argparse.Namespace) -> int:
    if not 1 <= args.replays <= MAX_REPLAYS:
        raise InputError(
            f"--replays: expected an integer from 1 to {MAX_REPLAYS}, got {args.replays}"
        )
    return args.replays


def run(args: argparse.Namespace) -> dict:
    policies = _policies(args.policies)
    repeats, replays = _repeats(args), _replays(args)
    if not 0 <= args.seed <= bounds.SEED - (repeats - 1):  # the last repeat's seed too
        raise InputError(
            f"--seed: expected an integer from 0 to {bounds.SEED - (repeats - 1)} "
            f"(thaw_kernel/bounds.py), got {args.seed}"
        )
    _check_out(args.out)
    if args.profile is not None:
        read_profile(args.profile)  # bad input is refused before anything runs
    quick, full = SCENARIOS[args.scenario]
    scenario = quick if args.quick else full
    started = time.monotonic()
    load_before = os.getloadavg()[0]  # other work on the machine skews the real side
    reporting = free_page_reporting()  # a VM's memory can skew it too
    runs: dict[str, list[dict]] = {policy: [] for policy in policies}
    with (
        workspace(args.dir, "thaw-validate-", scenario.shm_bytes) as layout,
        Footprint(layout.work) as footprint,
    ):
        if reporting is not None:  # said once the input has passed (a refusal is one line)
            print(f"{PROG}: note: {reporting.note()}", file=sys.stderr)
        device = devices.kind()
        laps = _Laps()
        profile = args.profile or _measure(layout.work, device, scenario)
        laps.mark("profile")
        _, digest = read_profile(profile)
        sizes = write_checkpoints(scenario, layout)
        write_cluster(scenario, layout, sizes)
        laps.mark("checkpoints")
        files: dict[str, pd.DataFrame | bytes] = {
            "cluster.toml": layout.cluster.read_bytes(),
            "profile.json": profile.read_bytes(),
        }
        config = read_config(layout.cluster, profile)
        speeds = compare_speeds(scenario, config, devices.server_device(0))
        before = probe(scenario, layout)
        laps.mark("speeds and first probe")
        with _store(scenario, layout) as store_url:
            for seed in range(args.seed, args.seed + repeats):
                for replay in range(replays):
                    results, kept, before = _repeat(
                        scenario, layout, sizes, profile, policies, seed, replay, before, store_url
                    )
                    for policy, result in results.items():
                        runs[policy].append(result)
                    files |= kept
        laps.mark("replays")
    report = {
        "scenario": {"quick": args.quick, "seed": args.seed, "repeats": repeats}
        | {"replays": replays}
        | {"model_bytes": sizes}
        | vars(scenario)
        | {"decoder_bytes": {name: decoder_bytes(config) for name, config in MODELS.items()}},
        "profile": {"path": str(args.profile or "measured"), "sha256": digest},
        # What the simulator's side read: nothing the replay measured. POLICY-profile.json
        # is profile.json with its start-up timed again around that replay.
        "simulator_inputs": ["seed-N/trace.csv", "cluster.toml", "seed-N/POLICY-profile.json"],
        "wall_s": time.monotonic() - started,
        "phases_s": laps.seconds,
        "load_average_1min": {"start": load_before, "end": os.getloadavg()[0]},
        "free_page_reporting_order": None if reporting is None else reporting.order,
        "machine_footprint": footprint.report(),
        "device": devices.kind(),
        "servers_per_device": devices.servers_per_device(scenario.servers),
        "inference_speeds": speeds,
        "policies": {
            policy: summarize(results)
            | {"pooled": _pooled(files, policy, results), "runs": results}
            for policy, results in runs.items()
        },
    }
    report |= p99_ratios(report["policies"])
    if args.out is not None:
        _write_out(args.out, report, files)
    return report


def _table(report: dict) -> str:
    """TTFT per policy and percentile, medians over the repeats, with the errors' range
    and the error with the profile's start-up as measured; then each cold-start stage,
    real beside simulated."""
    repeats = report["scenario"]["repeats"]
    lines = [
        f"TTFT, median of {repeats} repeat(s); error = sim / real - 1, its range over repeats;",
        "|error|: the median of its size over repeats; pooled: over every repeat's requests;",
        "as measured: the error with the profile's start-up, not timed again around the replay",
        f"{'policy':<14} {'':>4} {'real s':>8} {'sim s':>8} {'error':>7}  {'range':>15}"
        f"  {'|error|':>7} {'pooled':>7}  {'as measured':>11}",
    ]
    for policy, result in report["policies"].items():
        for q in PERCENTILES:
            real, sim = result[f"ttft_p{q}_real_s"], result[f"ttft_p{q}_sim_s"]
            error = result[f"ttft_p{q}_rel_error"]
            low, high = result[f"ttft_p{q}_rel_error_range"]
            measured = result["with_profile_startup"][f"ttft_p{q}_rel_error"]
            size, pooled_error = (
                result[f"ttft_p{q}_abs_rel_error"],
                result["pooled"][f"ttft_p{q}_rel_error"],
            )
            lines.append(
                f"{policy:<14} p{q:<3} {real:8.3f} {sim:8.3f} {error:+7.1%}  "
                f"{low:+7.1%}..{high:+7.1%}  {size:7.1%} {pooled_error:+7.1%}  {measured:+11.1%}"
            )
    lines += ["", *_conditioning_table(report["policies"])]
    lines += ["", "cold-start stages, median s (median of repeats)"]
    lines.append(f"{'policy':<14} {'stage':<16} {'real s':>8} {'sim s':>8}")
    for policy, result in report["policies"].items():
        for stage, sides in result["stages"].items():
            lines.append(f"{policy:<14} {stage:<16} {sides['real_s']:8.3f} {sides['sim_s']:8.3f}")
    lines += ["", "migrated requests, summed over repeats"]
    lines.append(f"{'policy':<14} {'real':>8} {'sim':>8}")
    for policy, result in report["policies"].items():
        moved = result["migrated_requests"]
        lines.append(f"{policy:<14} {moved['real']:8d} {moved['sim']:8d}")
    lines += ["", "cold-start loads by tier: count and median s (summed; median of repeats)"]
    lines += _tier_table(report["policies"], "loads_by_tier", "loads", "median_s")
    for policy, result in report["policies"].items():
        shares = f"{_share(result, 'real')} real, {_share(result, 'sim')} simulated"
        lines.append(f"{policy:<14} share of cold TTFT spent loading: {shares}")
    lines += ["", "requests by the tier that served them: count and median TTFT s (summed; median)"]
    lines += _tier_table(report["policies"], "requests_by_tier", "requests", "ttft_median_s")
    if report["scenario"]["replays"] > 1:
        lines += ["", "real replays of one trace: |real / first replay's real - 1|, median"]
        lines.append(f"{'policy':<14} " + " ".join(f"{'p' + str(q):>7}" for q in PERCENTILES))
        for policy, result in report["policies"].items():
            spread = (result[f"ttft_p{q}_replay_spread"] for q in PERCENTILES)
            lines.append(f"{policy:<14} " + " ".join(f"{x:7.1%}" for x in spread))
    if "p99_ratio_random_to_startup_aware_real" in report:
        real = report["p99_ratio_random_to_startup_aware_real"]
        sim = report["p99_ratio_random_to_startup_aware_sim"]
        lines += ["", f"p99 random / startup-aware: real {real:.2f}, sim {sim:.2f}"]
    lines += ["", _footprint_line(report["machine_footprint"])]
    phases = ", ".join(f"{phase} {s:.0f} s" for phase, s in report["phases_s"].items())
    lines.append(f"wall time {report['wall_s']:.0f} s: {phases}")
    return "\n".join(lines)


def _footprint_line(footprint: dict) -> str:
    """The machine's memory in use and the scratch disk's used space, start and peak."""
    said = []
    for name, key in (("memory in use", "memory_in_use"), ("disk used", "disk_used")):
        start, peak = footprint[f"{key}_start_bytes"], footprint[f"{key}_peak_bytes"]
        if start is not None and peak is not None:
            said.append(f"{name} {start / 1e9:.1f} -> {peak / 1e9:.1f}")
    return "machine footprint (GB, start -> peak): " + (", ".join(said) or "unknown")


def _conditioning_table(policies: dict[str, dict]) -> list[str]:
    """Per policy and percentile, how far the simulator's own percentile moves with every
    speed 5% off, and the rank error, medians over the repeats and pooled."""
    lines = [
        "how much an error can say (medians of repeats): moves = the simulator's percentile",
        "with every speed 5% faster or slower; rank = share of simulated requests below the",
        "real percentile, less its own share (|rank|: median size; pooled: all requests)",
        f"{'policy':<14} {'':>4} {'moves':>7} {'rank':>7} {'|rank|':>7} {'pooled':>7}",
    ]
    for policy, result in policies.items():
        lines += [
            f"{policy:<14} p{q:<3} {result[f'ttft_p{q}_sensitivity']:7.1%} "
            f"{result[f'ttft_p{q}_rank_error']:+7.1%} {result[f'ttft_p{q}_abs_rank_error']:7.1%} "
            f"{result['pooled'][f'ttft_p{q}_rank_error']:+7.1%}"
            for q in PERCENTILES
        ]
    return lines


def _tier_table(policies: dict[str, dict], key: str, count: str, median: str) -> list[str]:
    """Per policy and tier, real beside simulated: the `count` and the `median` in s."""
    lines = [f"{'policy':<14} {'tier':<7} {'real n':>7} {'real s':>8} {'sim n':>7} {'sim s':>8}"]
    for policy, result in policies.items():
        real, sim = result[f"{key}_real"], result[f"{key}_sim"]
        lines += [
            f"{policy:<14} {tier:<7} {real[tier][count]:7d} {_s(real[tier][median])} "
            f"{sim[tier][count]:7d} {_s(sim[tier][median])}"
            for tier in real
        ]
    return lines


def _s(seconds: float | None) -> str:
    return f"{seconds:8.3f}" if seconds is not None and np.isfinite(seconds) else f"{'-':>8}"


def _share(result: dict, side: str) -> str:
    share = result[f"load_share_{side}"]
    return "-" if share is None else f"{share:.2f}"


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    # A killed run still removes its scratch files and memory (`finally` runs on exit).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))

    def body() -> int:
        try:
            report = run(args)
        except (RuntimeError, subprocess.CalledProcessError) as err:
            print(f"{PROG}: error: {err}", file=sys.stderr)
            return 1
        print(json.dumps(report, indent=2) if args.json else _table(report))
        return 0

    return run_command(PROG, body)
