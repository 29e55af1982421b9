"""One seed, independent random streams: the trace's model draws and the policy's choices.

Separate streams keep a policy's randomness from shifting the workload: every policy run
with the same seed sees the same trace.
"""

import numpy as np

_STREAMS = {"trace": 0, "policy": 1}


def rng(seed: int, stream: str) -> np.random.Generator:
    return np.random.default_rng([_STREAMS[stream], seed])
