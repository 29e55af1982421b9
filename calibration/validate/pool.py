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


def replays(out: Path) -> dict[str, list[Path]]:
    """Per policy, the folders of its replays in the validation written to `out`."""
    report = out / "report.json"
    try:
        policies = json.loads(report.read_text())["policies"]
        return {
            policy: [out / replay_folder(run["seed"], run["replay"]) for run in result["runs"]]
            for policy, result in policies.items()
        }
    except FileNotFoundError:
        raise InputError(f"{out}: no report.json (not a `calibration.validate --out`)") from None
    except (ValueError, KeyError, TypeError) as err:
        raise InputError(f"{report}: not a validation report ({err!r})") from None


def pool(outs: list[Path]) -> dict:
    """Per policy (those of every validation), its replays and requests counted and the
    percentiles over them all; and the p99 ratios, where random and startup-aware ran."""
    seen: set[Path] = set()
    for out in outs:
        if out.resolve() in seen:
            raise InputError(f"{out}: given twice (its requests would count twice)")
        seen.add(out.resolve())
    by_out = [replays(out) for out in outs]
    common = [policy for policy in by_out[0] if all(policy in found for found in by_out)]
    if not common:
        raise InputError("no policy ran in every validation given")
    policies = {}
    for policy in common:
        folders = [folder for found in by_out for folder in found[policy]]
        real, simulated = ([_ttfts(f, policy, side) for f in folders] for side in ("real", "sim"))
        policies[policy] = {
            "replays": len(folders),
            "requests": int(sum(len(t) for t in real)),
        } | pooled(real, simulated)
    return {"validations": [str(out) for out in outs], "policies": policies} | p99_ratios(policies)


def _ttfts(folder: Path, policy: str, side: str) -> np.ndarray:
    """One replay's TTFTs of `policy`, real or simulated (`side`)."""
    path = folder / f"{policy}-{side}.csv"
    try:
        return pd.read_csv(path, usecols=["ttft_s"])["ttft_s"].to_numpy()
    except FileNotFoundError:
        raise InputError(f"{path}: missing (the validation's files are incomplete)") from None
    except ValueError as err:
        raise InputError(f"{path}: no ttft_s column ({err})") from None


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
