"""Published results, each in its paper's own setting, on thaw.

    python benchmarks/reproduce.py --list
    python benchmarks/reproduce.py NAME [--json] [--seeds N] [--out DIR]

Each reproduction's parameters come from its paper (or the paper's artifact), written with
their sources in configs/reproductions/; where neither says, the file says what thaw
chose. A run prints thaw's figure, the mean over `--seeds` seeds with its bootstrap 95%
interval, beside the paper's, and whether it reproduced it: the paper's direction and its
figure within 30% (a range: its nearer end; a bound stated without a figure: beyond
it). `--out DIR` writes the figure (DIR/NAME.png, shaped like the paper's)
and the result (DIR/NAME.json). A benchmark: it exits 0 whatever the verdict.
"""

import argparse
import json
import sys
from pathlib import Path

from reproductions import REPRODUCTIONS
from reproductions.verdict import judge

SEEDS = 5  # a reproduction's spec may set its own default (`seeds` under [workload])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", nargs="?", choices=sorted(REPRODUCTIONS), help="which one")
    parser.add_argument("--list", action="store_true", help="name every reproduction")
    parser.add_argument(
        "--seeds", type=int, help="seeds to run (default: the reproduction's, else 5)"
    )
    parser.add_argument("--json", action="store_true", help="one JSON object")
    parser.add_argument("--out", type=Path, help="a folder for the figure and the result")
    args = parser.parse_args(argv)
    if args.list:
        for name, reproduction in sorted(REPRODUCTIONS.items()):
            paper = reproduction.paper()
            print(f"{name:<14} {paper['name']}: {paper['claim']} ({_figure(paper)})")
        return 0
    if args.name is None:
        parser.error("name a reproduction, or --list")
    reproduction = REPRODUCTIONS[args.name]
    spec = reproduction.read()
    if args.seeds is None:
        args.seeds = spec["workload"].get("seeds", SEEDS)
        if not isinstance(args.seeds, int) or isinstance(args.seeds, bool):
            parser.error(f"{reproduction.spec}.toml: workload.seeds: expected an integer")
    if not 1 <= args.seeds <= 1000:
        parser.error("--seeds: expected 1 to 1000")
    per_seed, details = reproduction.run(spec, args.seeds)
    verdict = judge(spec["paper"], per_seed)
    result = verdict.as_dict() | {"name": args.name, "seeds": args.seeds, "details": details}
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        reproduction.figure(details, spec["paper"], args.out / f"{args.name}.png")
        (args.out / f"{args.name}.json").write_text(json.dumps(result, indent=2) + "\n")
    if args.json:
        print(json.dumps(result))
    else:
        low, high = verdict.thaw_interval
        print(f"{verdict.paper}: {verdict.claim}")
        interval = f"[{low:.3f}, {high:.3f}]"
        print(f"  paper {_figure(spec['paper'])}   thaw {verdict.thaw_value:.3f} {interval}")
        print(f"  reproduced: {'yes' if verdict.reproduced else 'no'}")
    return 0


def _figure(paper: dict) -> str:
    """A paper's figure, its range, or the bound its direction sets."""
    for bound in ("below", "above"):
        if bound in paper:
            return f"{bound} {paper[bound]:g}"
    value = paper["value"]
    return "-".join(f"{v:.3g}" for v in value) if isinstance(value, list) else f"{value:.3g}"


if __name__ == "__main__":
    sys.exit(main())
