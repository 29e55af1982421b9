"""An instance's runtime start-up by what ran beside it, real against simulated.

On one host every start-up shares the cores with the others and with the loads' and
downloads' CPU work, and the simulator shares them by a rule fitted on probes
(`calibration.measure.host_cores`). Where that rule falls short, the TTFT errors say
only that the simulator is optimistic; grouping the start-ups by the work they overlapped
says under which company it is. Each side is grouped on its own timeline: a start-up
(spawn to torch imported; the simulator's instance log's `runtime_s`) is beside
another start-up, a load from SSD (a remote load's part after its download) or a
download when their spans overlap. Loads from DRAM are too short to count. The
simulator's runtime is its instance log's `runtime_s`, which holds where it ends also
when the load runs beside it (`load_beside_startup`).
"""

import numpy as np
import pandas as pd

from calibration.validate.load_span import sim_load_span
from thaw_kernel.tiers import Tier

KINDS = ("start-up", "load", "download")
ALONE = "alone"


def runtime_start_beside(
    real: pd.DataFrame, sim: pd.DataFrame, warmup_s: float, beside: bool = False
) -> dict[str, dict[str, float | int | None]]:
    """Per company (`alone`, or the kinds beside it joined by "+"), the real and simulated
    start-ups' count and median: `real` is the replay's instances (`Records.instances_frame`),
    `sim` the simulator's instance log (`beside`: its loads beside the start-ups)."""
    real_groups = _grouped(real_spans(real))
    sim_groups = _grouped(sim_spans(sim, warmup_s, beside))
    out = {}
    for label in sorted(set(real_groups) | set(sim_groups), key=company_order):
        r, s = real_groups.get(label, []), sim_groups.get(label, [])
        out[label] = {
            "real_n": len(r),
            "real_s": float(np.median(r)) if r else None,
            "sim_n": len(s),
            "sim_s": float(np.median(s)) if s else None,
        }
    return out


# (spawned, started, began, downloaded, loaded, tier): the runtime runs from spawned to
# started, the load (its download first, from the remote store) from began to loaded.
Spans = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def real_spans(rows: pd.DataFrame) -> Spans:
    """The spans of the replay's instances: a download ends where it was stamped; a load
    that downloaded nothing "downloaded" at its beginning; a load begins when the runtime
    has started, or where a store read it, when the store took its order."""
    if rows.empty:  # a replay that started nothing has no columns either
        return tuple(np.array([]) for _ in range(6))  # type: ignore[return-value]
    started = rows["started"].to_numpy(dtype=float)
    began = _column(rows, "load_began", started)
    downloaded = _column(rows, "downloaded", began)
    loaded = _column(rows, "load_ended", rows["loaded"].to_numpy(dtype=float))
    spawned = rows["spawned"].to_numpy(dtype=float)
    return spawned, started, began, downloaded, loaded, _tiers(rows)


def _column(rows: pd.DataFrame, name: str, otherwise: np.ndarray) -> np.ndarray:
    """`rows[name]`, or `otherwise` where it is missing."""
    if name not in rows:
        return otherwise
    values = rows[name].to_numpy(dtype=float)
    return np.where(np.isnan(values), otherwise, values)


def sim_spans(log: pd.DataFrame, warmup_s: float, beside: bool = False) -> Spans:
    """The same spans from the simulator's instance log: the runtime is its `runtime_s`,
    the load follows the runtime or, `beside`, begins with it, and the download opens
    the load."""
    loaded = log[~log["asleep"]].dropna(subset=["ready_s", "load_s"])
    spawned = loaded["allocated_s"].to_numpy(dtype=float)
    began, ended = sim_load_span(loaded, warmup_s, beside)
    started = spawned + loaded["runtime_s"].to_numpy(dtype=float)
    download = np.nan_to_num(loaded["download_s"].to_numpy(dtype=float))
    return spawned, started, began, began + download, ended, _tiers(loaded)


def _tiers(rows: pd.DataFrame) -> np.ndarray:
    return rows["tier"].astype(str).to_numpy()


def _grouped(spans: Spans) -> dict[str, list[float]]:
    """Each start-up's runtime under the label of the company it kept."""
    spawned, started = spans[0], spans[1]
    groups: dict[str, list[float]] = {}
    for i in np.flatnonzero(np.isfinite(started) & np.isfinite(spawned)):
        a, b = spawned[i], started[i]
        groups.setdefault(company(spans, i, a, b), []).append(float(b - a))
    return groups


def company(spans: Spans, i: int, a: float, b: float) -> str:
    """The kinds of work of the starts other than start `i` that overlapped the span
    from `a` to `b` (`alone`, or the kinds joined by "+"): a start-up (spawn to start),
    a load from SSD (a remote start's part after its download) or a download."""
    spawned, started, began, downloaded, loaded, tier = spans
    others = np.arange(len(spawned)) != i
    from_disk = (tier == Tier.SSD) | (tier == Tier.REMOTE)
    disk_from = np.where(tier == Tier.REMOTE, downloaded, began)
    downloads = (tier == Tier.REMOTE) & (downloaded > began)
    near = (
        others & (spawned < b) & (started > a),
        others & from_disk & (disk_from < b) & (loaded > a) & (loaded > disk_from),
        others & downloads & (began < b) & (downloaded > a),
    )
    return "+".join(kind for kind, hit in zip(KINDS, near, strict=True) if hit.any()) or ALONE


def overlapping(begins: np.ndarray, ends: np.ndarray, i: int) -> np.ndarray:
    """Which spans other than span `i` overlap it (open intervals: touching is not)."""
    return (np.arange(len(begins)) != i) & (begins < ends[i]) & (ends > begins[i])


def company_order(label: str) -> tuple[int, str]:
    """Alone first, then by how many kinds kept it company."""
    return (0 if label == ALONE else label.count("+") + 1, label)
