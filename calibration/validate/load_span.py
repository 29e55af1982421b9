"""Where a simulated instance's checkpoint load lies in time, from the simulator's
instance log, which gives its length (`load_s`) but not its place: it ends where the
warm-up begins, after the start-up, or, where the cluster loads beside the start-up
(`load_beside_startup`), begins with it."""

import numpy as np
import pandas as pd


def sim_load_span(
    log: pd.DataFrame, warmup_s: float, beside: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Each simulated instance's load, (begin, end), from its instance log's rows: it
    ends where the warm-up begins, or `beside` the start-up, it begins with it."""
    load = log["load_s"].to_numpy(dtype=float)
    if beside:
        start = log["allocated_s"].to_numpy(dtype=float)
        return start, start + load
    end = log["ready_s"].to_numpy(dtype=float) - warmup_s
    return end - load, end
