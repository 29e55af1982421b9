"""`python -m calibration.validate`: the simulator's TTFT error against a real replay.

Replays a short trace for real on this machine (`calibration.replay`: two servers with one
"GPU" each, real checkpoints, real cold starts through the real loader, real inference),
then simulates the same trace on the same cluster with the profile `calibration.measure`
measured here (or `--profile`), and prints p50, p90 and p99 TTFT of both and the signed
relative error per policy. Bad input is one line on stderr and exit status 2; a failed
measurement or replay, one line and status 1.
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd

import traces
from calibration.measure.startup_probe import measure_startup
from calibration.validate.compare import errors, instance_phases, parts, simulate, with_startup
from calibration.validate.scale import compare_speeds
from calibration.validate.scenario import (
    FULL,
    MODELS,
    QUICK,
    Layout,
    Scenario,
    write_checkpoints,
    write_cluster,
    write_trace,
)
from calibration.validate.scheduler import Replay
from sim.common import seeds
from sim.common.cli import Parser
from sim.common.cli import run as run_command
from sim.common.errors import InputError
from sim.common.publish import check_replaceable, staged_directory
from sim.config import read_config
from sim.profile import read_profile

PROG = "python -m calibration.validate"
KIND = "validation"
# The policies the real replay can carry out: it neither migrates nor preempts.
POLICIES = ("random", "locality", "startup-aware")
SLACK_S = 300.0  # a real replay still running this long after the trace's end has hung
STARTUP_PROBES = 3


def _parser() -> argparse.ArgumentParser:
    parser = Parser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a 30-request trace (CI)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--profile", type=Path, help="a profile (default: measure one now)")
    parser.add_argument("--policies", default=",".join(POLICIES), help="comma-separated")
    parser.add_argument("--seed", type=int, default=0, help="fixes the trace and policy draws")
    parser.add_argument("--dir", type=Path, default=Path("/var/tmp"), help="disk for the SSDs")
    parser.add_argument("--out", type=Path, help="also write the report and per-request tables")
    return parser


def _policies(text: str) -> list[str]:
    names = list(dict.fromkeys(name for name in text.split(",") if name))  # once each
    for name in names:
        if name not in POLICIES:
            raise InputError(
                f"--policies: {name!r} is not one the real replay can run "
                f"(it neither migrates nor preempts): choose among {', '.join(POLICIES)}"
            )
    if not names:
        raise InputError("--policies: give at least one policy")
    return names


@contextmanager
def _workspace(disk: Path) -> Iterator[Layout]:
    """Scratch space: the SSDs on `disk`, the DRAM caches on /dev/shm (memory)."""
    if not disk.is_dir():
        raise InputError(f"--dir {disk}: no such directory")
    try:
        work = Path(tempfile.mkdtemp(prefix="thaw-validate-", dir=disk))
    except OSError as err:
        raise InputError(f"--dir {disk}: cannot write there: {err.strerror}") from None
    shm = Path("/dev/shm")
    dram = Path(tempfile.mkdtemp(prefix="thaw-validate-", dir=shm if shm.is_dir() else work))
    try:
        yield Layout(work, dram)
    finally:
        shutil.rmtree(dram, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)


def _measure(work: Path) -> Path:
    """Run `calibration.measure` (quick, on the CPU) into the work directory."""
    out = work / "profile.json"
    command = [sys.executable, "-m", "calibration.measure", "--device", "cpu", "--quick"]
    command += ["--dir", str(work), "--out", str(out)]
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
) -> tuple[dict, dict[str, pd.DataFrame]]:
    """The policy's report, and its tables by file name (real and simulated requests, the
    real instances)."""
    derived, _ = read_profile(profile)
    trace = traces.read(layout.trace, list(MODELS), seeds.rng(seed, "trace")).frame
    limit_s = float(trace["arrival_s"].max()) + SLACK_S
    replay = Replay(scenario, layout, sizes, trace, policy, seeds.rng(seed, "policy"), derived)
    records = replay.run(limit_s)
    # The profile's start-up probe again, right after: how far this machine drifted since
    # the profile was measured, apart from what the replay's overlapping start-ups add.
    probe = measure_startup("cpu", STARTUP_PROBES)["instance_startup"].median
    real = records.frame()
    simulated = simulate(layout, profile, policy, seed)
    phases = instance_phases(records)
    startup = phases["process_start_s_median"] + phases["build_s_median"]
    patched = with_startup(profile, startup, layout.work / "profile-replay-startup.json")
    corrected = simulate(layout, patched, policy, seed)["ttft_s"].to_numpy()
    real_ttft = real["ttft_s"].to_numpy()
    tables = {
        f"{policy}-real.csv": real,
        f"{policy}-sim.csv": simulated,
        f"{policy}-instances.csv": records.instances_frame(),
    }
    result = {
        "requests": len(trace),
        "real_ttfts": int(np.isfinite(real_ttft).sum()),
        **errors(real_ttft, simulated["ttft_s"].to_numpy()),
        "real": parts(real) | phases | {"startup_probe_after_s": probe},
        "sim": parts(simulated)
        | {
            "instance_startup_s": derived["instance_startup_s"],
            "migrated_requests": int((simulated["migrations"] > 0).sum()),
        },
        "with_replay_startup": {"instance_startup_s": startup}
        | {k: v for k, v in errors(real_ttft, corrected).items() if k.endswith("rel_error")},
    }
    if result["sim"]["migrated_requests"]:
        result["warning"] = (
            f"the simulator migrated {result['sim']['migrated_requests']} requests, which "
            "the real replay cannot: the two sides did not run the same policy"
        )
    return result, tables


def _check_out(out: Path | None) -> None:
    """Refuse, before minutes of replay, an `--out` that could not be written."""
    if out is None:
        return
    check_replaceable(out, KIND, "--out")


def _write_out(
    out: Path, report: dict, tables: dict[str, pd.DataFrame], inputs: dict[str, bytes]
) -> None:
    """The report, every table and the simulator's inputs (so that `python -m sim run
    --trace trace.csv --cluster cluster.toml --profile profile.json` reruns its side), as
    one directory put in place atomically."""
    with staged_directory(out, KIND) as staging:
        (staging / "report.json").write_text(json.dumps(report, indent=2) + "\n")
        for name, table in tables.items():
            table.to_csv(staging / name, index=False)
        for name, data in inputs.items():
            (staging / name).write_bytes(data)


def run(args: argparse.Namespace) -> dict:
    policies = _policies(args.policies)
    if args.seed < 0:
        raise InputError(f"--seed: expected an integer >= 0, got {args.seed}")
    _check_out(args.out)
    if args.profile is not None:
        read_profile(args.profile)  # bad input is refused before anything runs
    scenario = QUICK if args.quick else FULL
    started = time.monotonic()
    load_before = os.getloadavg()[0]  # other work on the machine skews the real side
    with _workspace(args.dir) as layout:
        profile = args.profile or _measure(layout.work)
        _, digest = read_profile(profile)
        sizes = write_checkpoints(scenario, layout)
        write_trace(scenario, layout, args.seed)
        write_cluster(scenario, layout, sizes)
        speeds = compare_speeds(scenario, read_config(layout.cluster, profile))
        runs = {
            p: _validate_policy(scenario, layout, sizes, profile, p, args.seed) for p in policies
        }
        inputs = {
            "trace.csv": layout.trace.read_bytes(),
            "cluster.toml": layout.cluster.read_bytes(),
            "profile.json": profile.read_bytes(),
        }
    report = {
        "scenario": {"quick": args.quick, "seed": args.seed, "model_bytes": sizes} | vars(scenario),
        "profile": {"path": str(args.profile or "measured"), "sha256": digest},
        "wall_s": time.monotonic() - started,
        "load_average_1min": {"start": load_before, "end": os.getloadavg()[0]},
        "inference_speeds": speeds,
        "policies": {policy: result for policy, (result, _) in runs.items()},
    }
    if args.out is not None:
        tables = {name: t for _, named in runs.values() for name, t in named.items()}
        _write_out(args.out, report, tables, inputs)
    return report


def _table(report: dict) -> str:
    lines = [f"{'policy':<14} {'':>4} {'real s':>8} {'sim s':>8} {'error':>7}"]
    for policy, result in report["policies"].items():
        for q in (50, 90, 99):
            real, sim = result[f"ttft_p{q}_real_s"], result[f"ttft_p{q}_sim_s"]
            error = result[f"ttft_p{q}_rel_error"]
            lines.append(f"{policy:<14} p{q:<3} {real:8.3f} {sim:8.3f} {error:+7.1%}")
    warnings = [f"warning: {r['warning']}" for r in report["policies"].values() if "warning" in r]
    return "\n".join(lines + warnings)


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
