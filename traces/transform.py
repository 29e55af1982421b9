"""Transformations of a canonical trace (sorted by arrival): time window, rate scaling by
compression, thinning or replication, and model renaming. Each returns a new sorted frame;
those that draw take the seeded generator.
"""

import numpy as np
import pandas as pd

from thaw_kernel import bounds
from traces.errors import TraceError
from traces.labels import categorical
from traces.options import Options


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values("arrival_s", kind="stable", ignore_index=True)


def window(frame: pd.DataFrame, start: float, end: float) -> pd.DataFrame:
    """Arrivals in [start, end), shifted so that `start` becomes 0."""
    t = frame["arrival_s"].to_numpy()
    kept = frame[(t >= start) & (t < end)].reset_index(drop=True)
    kept["arrival_s"] = kept["arrival_s"] - start
    return kept


def compress(frame: pd.DataFrame, factor: float) -> pd.DataFrame:
    """Time runs `factor` times faster: rate x factor, duration / factor, same requests."""
    return frame.assign(arrival_s=frame["arrival_s"] / factor)


def thin(frame: pd.DataFrame, keep: float, rng: np.random.Generator) -> pd.DataFrame:
    """Each request kept independently with probability `keep`: rate x keep, same shape."""
    return frame[rng.random(len(frame)) < keep].reset_index(drop=True)


def replicate(frame: pd.DataFrame, factor: float, rng: np.random.Generator) -> pd.DataFrame:
    """Rate x factor by superposing copies: the original, then whole copies shifted
    circularly by a uniform random offset each (their bursts fall at other times), then a
    last shifted copy thinned to the fractional part of `factor`."""
    if len(frame) * factor > bounds.REQUESTS:
        raise TraceError(
            f"--replicate/--scale: {len(frame)} requests x {factor:g} is more than "
            f"{bounds.REQUESTS} requests (thaw_kernel/bounds.py)"
        )
    t = frame["arrival_s"].to_numpy()
    span = float(t.max()) * (1 + 1 / len(t)) if len(t) and t.max() > 0 else 1.0
    copies = [frame]
    whole, part = int(factor), factor - int(factor)
    for k in range(1, whole + (part > 0)):
        copy = frame if k < whole else thin(frame, part, rng)
        shift = rng.uniform(0, span)
        copies.append(copy.assign(arrival_s=(copy["arrival_s"] + shift) % span))
    return _sorted(pd.concat(copies, ignore_index=True))


def remap(frame: pd.DataFrame, names: dict[str, str]) -> pd.DataFrame:
    """Models renamed by `names` (others kept); several may merge into one."""
    model = pd.Categorical(frame["model"])
    renamed = categorical(model.codes, [names.get(c, c) for c in model.categories])
    return frame.assign(model=renamed)


def apply(
    frame: pd.DataFrame, options: Options, rng: np.random.Generator, *, scaled: bool
) -> pd.DataFrame:
    """Every transformation `options` asks for, in a fixed order: window, compression,
    thinning, replication (with `scale` unless the reader already `scaled` counts).
    Renaming models is the caller's: it comes first, to check names in file order."""
    if options.window is not None:
        frame = window(frame, *options.window)
    if options.compress != 1:
        frame = compress(frame, options.compress)
    thin_by, replicate_by = options.thin, options.replicate
    if not scaled and options.scale < 1:
        thin_by *= options.scale
    if not scaled and options.scale > 1:
        replicate_by *= options.scale
    if thin_by < 1:
        frame = thin(frame, thin_by, rng)
    if replicate_by > 1:
        frame = replicate(frame, replicate_by, rng)
    return frame
