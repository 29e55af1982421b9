"""Percentiles over several validations' requests together.

    python -m calibration.validate.pool DIR [DIR ...] [--json]

One validation's p99 over 100 requests is about its largest TTFT, and it moves by tens
of percent from one trace to the next; so does random's p99 over startup-aware's, a
ratio of two such figures. Pooled over the replays of several validations (each DIR
written by `python -m calibration.validate --out DIR`), a tail percentile rests on a
thousand requests or more. Prints, per policy, the real and simulated p50, p90 and p99
TTFT over every replay's requests together and the error of each, and random's p99 over
startup-aware's on each side; `--json` prints the same as one object.
"""

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from calibration.validate.compare import PERCENTILES
from calibration.validate.out_dir import replay_folder
from calibration.validate.summary import p99_ratios, pooled
from thaw_kernel.command_line import Parser
from thaw_kernel.command_line import run as run_command
from thaw_kernel.errors import InputError

PROG = "python -m calibration.validate.pool"


# What may differ between validations pooled together: the rest is their scenario.
PER_RUN = ("seed", "repeats", "replays")


def replays(out: Path) -> tuple[dict, dict[str, list[tuple[int, int]]]]:
    """The scenario of the validation written to `out`, and per policy the (seed,
    replay) of each of its replays."""
    report = out / "report.json"
    try:
        document = json.loads(report.read_text())
    except FileNotFoundError:
        raise InputError(f"{out}: no report.json (not a `calibration.validate --out`)") from None
    except ValueError as err:
        raise InputError(f"{report}: not JSON ({err})") from None
    try:
        scenario = {k: v for k, v in document["scenario"].items() if k not in PER_RUN}
        found = {
            str(policy): [_replay(run) for run in result["runs"]]
            for policy, result in document["policies"].items()
        }
    except (KeyError, TypeError, AttributeError, ValueError) as err:
        raise InputError(f"{report}: not a validation report ({err!r})") from None
    if not found or not all(found.values()):
        raise InputError(f"{report}: a validation report with no replays")
    return scenario, found


def _replay(run: dict) -> tuple[int, int]:
    seed, replay = run["seed"], run["replay"]
    if not (type(seed) is int and type(replay) is int):  # a bool is no seed
        raise ValueError(f"seed {seed!r}, replay {replay!r}")
    return seed, replay


def pool(outs: list[Path]) -> dict:
    """Per policy (those of every validation), its replays and requests counted and the
    percentiles over them all; and the p99 ratios, where random and startup-aware ran.
    Refused: a validation given twice, a replay (seed and replay) in two validations,
    validations of different scenarios."""
    seen: set[Path] = set()
    for out in outs:
        if out.resolve() in seen:
            raise InputError(f"{out}: given twice (its requests would count twice)")
        seen.add(out.resolve())
    read = [replays(out) for out in outs]
    for out, (scenario, _) in zip(outs, read, strict=True):
        if scenario != read[0][0]:
            raise InputError(f"{out}: its scenario differs from {outs[0]}'s: not one population")
    common = [policy for policy in read[0][1] if all(policy in found for _, found in read)]
    if not common:
        raise InputError("no policy ran in every validation given")
    policies = {}
    for policy in common:
        real, simulated = _tables(_folders(outs, [found for _, found in read], policy), policy)
        policies[policy] = {
            "replays": len(real),
            "requests": int(sum(len(t) for t in real)),
        } | pooled(real, simulated)
    return {"validations": [str(out) for out in outs], "policies": policies} | p99_ratios(policies)


def _folders(
    outs: list[Path], found: list[dict[str, list[tuple[int, int]]]], policy: str
) -> list[Path]:
    """The folders of `policy`'s replays over every validation; a (seed, replay) in two
    of them is refused."""
    folders: dict[tuple[int, int], Path] = {}
    for out, replays_of in zip(outs, found, strict=True):
        for seed, replay in replays_of[policy]:
            if (seed, replay) in folders:
                raise InputError(
                    f"{out}: seed {seed}, replay {replay} of {policy} is also in "
                    f"{folders[seed, replay].parent}: the same trace counted twice"
                )
            folders[seed, replay] = out / replay_folder(seed, replay)
    return list(folders.values())


def _tables(folders: list[Path], policy: str) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """`policy`'s real and simulated TTFTs, a replay each, of the same lengths."""
    real, simulated = [], []
    for folder in folders:
        real.append(_ttfts(folder, policy, "real"))
        simulated.append(_ttfts(folder, policy, "sim"))
        if len(real[-1]) != len(simulated[-1]):
            raise InputError(
                f"{folder}: {policy}'s real and simulated tables have "
                f"{len(real[-1])} and {len(simulated[-1])} requests"
            )
    return real, simulated


def _ttfts(folder: Path, policy: str, side: str) -> np.ndarray:
    """One replay's TTFTs of `policy`, real or simulated (`side`): positive seconds, or
    NaN for a request never served."""
    path = folder / f"{policy}-{side}.csv"
    try:
        column = pd.read_csv(path, usecols=["ttft_s"])["ttft_s"]
    except FileNotFoundError:
        raise InputError(f"{path}: missing (the validation's files are incomplete)") from None
    except (pd.errors.EmptyDataError, pd.errors.ParserError) as err:
        raise InputError(f"{path}: not a table ({err})") from None
    except ValueError as err:
        raise InputError(f"{path}: no ttft_s column ({err})") from None
    ttft = pd.to_numeric(column, errors="coerce").to_numpy(dtype=float)
    if not len(ttft) or (np.isnan(ttft) & column.notna().to_numpy()).any() or (ttft <= 0).any():
        raise InputError(f"{path}: ttft_s must hold positive seconds, one row a request")
    return ttft


def table(result: dict) -> str:
    """`pool`'s result as the text the command prints."""
    lines = [
        f"pooled over {len(result['validations'])} validations; error: simulated / real - 1",
        f"{'policy':<14} {'replays':>7} {'requests':>8}  "
        + "  ".join(f"{'p' + str(q) + ' real / sim':>20} {'error':>7}" for q in PERCENTILES),
    ]
    for policy, row in result["policies"].items():
        cells = (
            f"{row[f'ttft_p{q}_real_s']:8.2f} / {row[f'ttft_p{q}_sim_s']:6.2f} s "
            f"{row[f'ttft_p{q}_rel_error']:+7.1%}"
            for q in PERCENTILES
        )
        lines.append(f"{policy:<14} {row['replays']:>7} {row['requests']:>8}  " + "  ".join(cells))
    if "p99_ratio_random_to_startup_aware_real" in result:
        real = result["p99_ratio_random_to_startup_aware_real"]
        sim = result["p99_ratio_random_to_startup_aware_sim"]
        lines.append(
            f"p99 random / startup-aware: real {real:.3f}, sim {sim:.3f} ({sim / real - 1:+.1%})"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("outs", nargs="+", type=Path, metavar="DIR", help="validations' --out")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args(argv)

    def body() -> None:
        result = pool(args.outs)
        print(json.dumps(result, indent=2) if args.json else table(result))

    return run_command(PROG, body)


if __name__ == "__main__":
    sys.exit(main())
