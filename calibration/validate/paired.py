"""Stage by stage, the real and simulated starts of one replay while both took the same
decisions.

A replay and its simulation part ways at the first decision they take differently: a
request that finds an instance warm on one side and expired on the other, a placement
that a start-up a few tenths of a second slower turns the other way. From there on their
TTFTs compare two histories, and a percentile's error mixes the model's error with the
parting. Before it, each start is the same start on both sides: the same model on the
same server from the same tier, spawned within `PAIRED_WITHIN_S` of each other (two
such starts begun close together may come in either order). The pairing ends at the
first real start with no such twin, or at a simulated start that no real one matched
in time: where the sides' clocks have drifted apart by more than that, the pairing ends
too, though no decision differed. Over the pairs, a stage's real duration over its
simulated one is the model's error on that stage alone: the runtime start-up (spawn to
torch imported), the download, and the load from disk (from SSD, or a remote start's
part after its download; loads from DRAM are too short to time). Each pair's stage is
also labelled with the real company it kept (`beside.company`). A stage whose span
either side never finished (a replay cut short) is left out.
"""

from collections.abc import Iterator

import numpy as np
import pandas as pd

from calibration.validate.beside import Spans, company, company_order, real_spans, sim_spans
from thaw_kernel.tiers import Tier

PAIRED_WITHIN_S = 0.5  # two starts this close are one start; a parting is further apart
STAGES = ("runtime", "download", "disk load")
Span = tuple[float, float]


def paired_stages(
    real: pd.DataFrame, sim: pd.DataFrame, warmup_s: float, beside: bool = False
) -> dict:
    """How many starts the two sides shared (`pairs`, of `instances` real ones) and, per
    stage, and per stage and company, the pairs' count, each side's median and the median
    of real over simulated: `real` is the replay's instances (`Records.instances_frame`),
    `sim` the simulator's instance log (`beside`: its loads beside the start-ups)."""
    real_rows = _in_start_order(real, "spawned")
    sim_rows = _in_start_order(
        sim[~sim["asleep"]].dropna(subset=["ready_s", "load_s"]), "allocated_s"
    )
    r, s = real_spans(real_rows), sim_spans(sim_rows, warmup_s, beside)
    pairs = _shared_starts(_keys(real_rows, r), _keys(sim_rows, s), r[0], s[0])
    stages: dict[str, list[tuple[str, float, float]]] = {stage: [] for stage in STAGES}
    for k, j in pairs:
        for stage, (a, b), (c, d) in _stage_spans(r, k, s, j):
            if np.isfinite([a, b, c, d]).all() and d > c:
                stages[stage].append((company(r, k, a, b), b - a, d - c))
    return {
        "pairs": len(pairs),
        "instances": len(real_rows),
        **{stage: _summed_up(rows) for stage, rows in stages.items()},
    }


def _in_start_order(frame: pd.DataFrame, column: str) -> pd.DataFrame:
    if frame.empty:
        return frame
    return frame.sort_values(column, kind="stable").reset_index(drop=True)


def _keys(rows: pd.DataFrame, spans: Spans) -> list[tuple[str, int, str]]:
    """Each start's model, server and tier."""
    if rows.empty:
        return []
    return list(zip(rows["model"].astype(str), rows["server"].astype(int), spans[5], strict=True))


def _shared_starts(
    real: list[tuple[str, int, str]],
    sim: list[tuple[str, int, str]],
    real_at: np.ndarray,
    sim_at: np.ndarray,
) -> list[tuple[int, int]]:
    """The (real, simulated) index pairs of the starts both sides made, in real start
    order, up to the parting."""
    pairs: list[tuple[int, int]] = []
    free = list(range(len(sim)))  # simulated starts not yet paired, in start order
    for k, key in enumerate(real):
        if free and sim_at[free[0]] < real_at[k] - PAIRED_WITHIN_S:
            break  # the simulator started something the replay did not
        twin = next(
            (j for j in free if sim[j] == key and abs(sim_at[j] - real_at[k]) <= PAIRED_WITHIN_S),
            None,
        )
        if twin is None:
            break
        pairs.append((k, twin))
        free.remove(twin)
    return pairs


def _stage_spans(r: Spans, k: int, s: Spans, j: int) -> Iterator[tuple[str, Span, Span]]:
    """(stage, real span, simulated span) for each stage that real start `k` and its
    simulated twin `j` went through."""
    spawned, started, began, downloaded, loaded, tier = range(6)
    yield "runtime", (r[spawned][k], r[started][k]), (s[spawned][j], s[started][j])
    if r[tier][k] == Tier.REMOTE:
        yield "download", (r[began][k], r[downloaded][k]), (s[began][j], s[downloaded][j])
    if r[tier][k] in (Tier.SSD, Tier.REMOTE):
        yield "disk load", (r[downloaded][k], r[loaded][k]), (s[downloaded][j], s[loaded][j])


def _summed_up(rows: list[tuple[str, float, float]]) -> dict:
    """The stage over all its pairs, and per company."""
    by = {"all": rows} | {
        label: [row for row in rows if row[0] == label]
        for label in sorted({row[0] for row in rows}, key=company_order)
    }
    return {label: _figures(group) for label, group in by.items()}


def _figures(rows: list[tuple[str, float, float]]) -> dict[str, float | int | None]:
    if not rows:
        return {"n": 0, "real_s": None, "sim_s": None, "ratio": None}
    real = np.array([row[1] for row in rows])
    sim = np.array([row[2] for row in rows])
    return {
        "n": len(rows),
        "real_s": float(np.median(real)),
        "sim_s": float(np.median(sim)),
        "ratio": float(np.median(real / sim)),
    }
