"""Stage by stage, the real and simulated starts of one replay while both took the same
decisions.

A replay and its simulation part ways at the first decision they take differently: a
request that finds an instance warm on one side and expired on the other, a placement
that a start-up a few tenths of a second slower turns the other way. From there on their
TTFTs compare two histories, and a percentile's error mixes the model's error with the
parting. Before it, each start is the same start on both sides: the same model on the
same server from the same tier, begun within `PAIRED_WITHIN_S` of each other. Over those
pairs, a stage's real duration over its simulated one is the model's error on that
stage alone: the runtime start-up (spawn to torch imported), the download, and the load
from disk (a remote start's part after its download; loads from DRAM are too short to
time). Each pair's stage is also labelled with the real company it kept (`beside`).
"""

import numpy as np
import pandas as pd

from calibration.validate.beside import ALONE, KINDS, Spans, company_order, real_spans, sim_spans
from thaw_kernel.tiers import Tier

PAIRED_WITHIN_S = 0.5  # two starts this close are one start; a parting is further apart
STAGES = ("runtime", "download", "disk load")


def paired_stages(real: pd.DataFrame, sim: pd.DataFrame, warmup_s: float) -> dict:
    """How many starts the two sides shared (`pairs`, of `instances` real ones) and, per
    stage and per stage and company, the pairs' count, each side's median and the
    median of real over simulated: `real` is the replay's instances
    (`Records.instances_frame`), `sim` the simulator's instance log."""
    real_rows, sim_rows = _in_start_order(real, "spawned"), _in_start_order(sim, "allocated_s")
    sim_rows = sim_rows[~sim_rows["asleep"]].dropna(subset=["ready_s", "load_s"])
    r, s = real_spans(real_rows), sim_spans(sim_rows, warmup_s)
    pairs = _shared_prefix(real_rows, sim_rows, r, s)
    stages: dict[str, list[tuple[str, float, float]]] = {stage: [] for stage in STAGES}
    for k in range(pairs):
        for stage, real_span, sim_span in _stage_spans(r, s, k):
            label = _company(r, k, real_span)
            stages[stage].append((label, real_span[1] - real_span[0], sim_span[1] - sim_span[0]))
    return {
        "pairs": pairs,
        "instances": len(real_rows),
        **{stage: _summed_up(rows) for stage, rows in stages.items()},
    }


def _in_start_order(frame: pd.DataFrame, column: str) -> pd.DataFrame:
    if frame.empty:
        return frame
    return frame.sort_values(column, kind="stable").reset_index(drop=True)


def _shared_prefix(real: pd.DataFrame, sim: pd.DataFrame, r: Spans, s: Spans) -> int:
    """How many starts, in start order, are the same start on both sides."""
    n = 0
    for k in range(min(len(r[0]), len(s[0]))):
        same = (
            real["model"].iat[k] == sim["model"].iat[k]
            and real["server"].iat[k] == sim["server"].iat[k]
            and r[4][k] == s[4][k]
            and abs(r[0][k] - s[0][k]) <= PAIRED_WITHIN_S
        )
        if not same:
            break
        n += 1
    return n


def _stage_spans(r: Spans, s: Spans, k: int):
    """(stage, real span, simulated span) for each stage start `k` went through."""
    spawned, started, downloaded, loaded, tier = range(5)
    yield "runtime", (r[spawned][k], r[started][k]), (s[spawned][k], s[started][k])
    if r[tier][k] == Tier.REMOTE:
        yield "download", (r[started][k], r[downloaded][k]), (s[started][k], s[downloaded][k])
    if r[tier][k] in (Tier.SSD, Tier.REMOTE):
        yield "disk load", (r[downloaded][k], r[loaded][k]), (s[downloaded][k], s[loaded][k])


def _company(r: Spans, k: int, span: tuple[float, float]) -> str:
    """The kinds of work of other starts that overlapped `span` on the real side."""
    spawned, started, downloaded, loaded, tier = r
    a, b = span
    others = np.arange(len(spawned)) != k
    from_disk = (tier == Tier.SSD) | (tier == Tier.REMOTE)
    near = (
        others & (spawned < b) & (started > a),
        others & from_disk & (downloaded < b) & (loaded > a) & (loaded > downloaded),
        others & (tier == Tier.REMOTE) & (started < b) & (downloaded > a) & (downloaded > started),
    )
    return "+".join(kind for kind, hit in zip(KINDS, near, strict=True) if hit.any()) or ALONE


def _summed_up(rows: list[tuple[str, float, float]]) -> dict:
    """The stage over all its pairs, and per company."""
    by = {"all": rows} | {
        label: [row for row in rows if row[0] == label]
        for label in sorted({row[0] for row in rows}, key=company_order)
    }
    return {label: _figures(group) for label, group in by.items()}


def _figures(rows: list[tuple[str, float, float]]) -> dict[str, float | int | None]:
    real = np.array([row[1] for row in rows])
    sim = np.array([row[2] for row in rows])
    timed = sim > 0
    return {
        "n": len(rows),
        "real_s": float(np.median(real)) if len(rows) else None,
        "sim_s": float(np.median(sim)) if len(rows) else None,
        "ratio": float(np.median(real[timed] / sim[timed])) if timed.any() else None,
    }
