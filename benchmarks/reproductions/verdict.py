"""What every reproduction reports: the paper's claim, thaw's figure over seeds with its
bootstrap interval, and whether thaw reproduced it."""

import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from analysis.stats import bootstrap_ci

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "configs" / "reproductions"
# The bundled Azure Functions 2019 sample (100 functions, 8 hours), which the
# reproductions on Functions arrivals replay.
FUNCTIONS_SAMPLE = ROOT / "tests" / "data" / "traces" / "azure-functions-2019-sample"
# Reproduced: the paper's direction, and its headline figure within this share of it
# (a 53% reduction reproduced as 37-69%; a range of 1.27-1.95x as 0.89-2.54x).
TOLERANCE = 0.3


@dataclass(frozen=True)
class Reproduction:
    """One paper's experiment: `run(seeds)` gives thaw's figure per seed and the details
    to print and plot; `figure(details, paper, path)` draws it shaped like the paper's."""

    spec: str  # configs/reproductions/SPEC.toml: the claim and the workload, with sources
    run: Callable[[dict, int], tuple[list[float], dict]]
    figure: Callable[[dict, dict, Path], None]

    def paper(self) -> dict:
        """The spec's [paper] table (name, reference, claim, and `value`, a figure or a
        [low, high] range, with its `neutral` point; or `below` or `above`, a bound)."""
        return self.read()["paper"]

    def read(self) -> dict:
        with (CONFIGS / f"{self.spec}.toml").open("rb") as f:
            return tomllib.load(f)


@dataclass(frozen=True)
class Verdict:
    paper: str
    claim: str
    paper_value: float | list[float] | None  # a figure, a [low, high] range, or none given
    thaw_value: float
    thaw_interval: tuple[float, float]
    reproduced: bool
    per_seed: list[float] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "paper": self.paper,
            "claim": self.claim,
            "paper_value": self.paper_value,
            "thaw_value": self.thaw_value,
            # One seed has no interval: null, not NaN, which JSON lacks.
            "thaw_interval": [x if np.isfinite(x) else None for x in self.thaw_interval],
            "reproduced": self.reproduced,
            "per_seed": self.per_seed,
        }


def judge(paper: dict, per_seed: list[float]) -> Verdict:
    """thaw's mean over seeds beside the paper's value: reproduced when it lies on the
    paper's side of the claim's neutral point (`neutral`: 0 for a reduction, the default;
    1 for a ratio) and within `TOLERANCE` of the figure (of the nearer end, for a range).
    A paper that states a bound and no figure (`below` or `above` instead of `value`) is
    reproduced when thaw's mean lies beyond that bound."""
    mean, low, high = bootstrap_ci(per_seed)
    if "value" in paper:
        neutral = float(paper.get("neutral", 0.0))
        value, reproduced = _against_figure(paper["value"], neutral, mean)
    elif "below" in paper:
        value, reproduced = None, bool(mean < float(paper["below"]))
    else:
        value, reproduced = None, bool(mean > float(paper["above"]))
    return Verdict(
        paper=paper["name"],
        claim=paper["claim"],
        paper_value=value,
        thaw_value=float(mean),
        thaw_interval=(float(low), float(high)),
        reproduced=reproduced,
        per_seed=[float(x) for x in per_seed],
    )


def _against_figure(
    value: float | list[float], neutral: float, mean: float
) -> tuple[float | list[float], bool]:
    """The paper's figure as reported, and whether `mean` reproduces it."""
    bounds = sorted(float(v) for v in value) if isinstance(value, list) else [float(value)] * 2
    side = np.sign(bounds[0] - neutral)
    if side == 0 or side != np.sign(bounds[1] - neutral):
        raise ValueError(f"paper value {value}: on both sides of its neutral point {neutral:g}")
    same_way = np.sign(mean - neutral) == side
    # Widened by the tolerance away from zero at either end, whatever their sign.
    low = bounds[0] * (1 - TOLERANCE * np.sign(bounds[0]))
    high = bounds[1] * (1 + TOLERANCE * np.sign(bounds[1]))
    within = low <= mean <= high
    return (bounds if isinstance(value, list) else bounds[0]), bool(same_way and within)
