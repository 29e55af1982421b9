"""Every instance's life, for plots over time: one row an instance, written as
`instances.parquet` beside the requests.

Instances are few next to requests (one per cold start), so a row each costs nothing;
it is what lets `analysis` draw GPUs held and warm instances over time. An instance that
sleeps (`sim.model.sleepers`) has a row per period: awake ones ending `asleep`, and asleep
ones (`asleep` true, no GPUs held) ending `woken` or `expired`. `load_s` and
`download_s` time its checkpoint load and the download part of it, per tier;
`runtime_s` its start-up's runtime part, to the end of the stages before and beside the
load (NaN for a wake); `prewarm`
says the keep-alive started it ahead of a request (whose prefill then cannot run behind
its load: only the request that starts an instance pipelines).
"""

import numpy as np
import pandas as pd

from sim.model.instance import Instance

# Why an instance's GPUs were freed.
ENDS = ("expired", "reclaimed", "migrated", "preempted", "running", "asleep", "woken")


class InstanceLog:
    def __init__(self) -> None:
        self._rows: list[tuple] = []

    def ended(self, instance: Instance, at: float, why: str) -> None:
        self._rows.append(
            (
                instance.id,
                instance.model.name,
                instance.server,
                instance.model.gpus,
                str(instance.tier),
                instance.allocated_at,
                instance.ready_at,
                at,
                ENDS.index(why),
                instance.peer_source,
                instance.chain,
                False,
                instance.load_s,
                instance.download_s,
                instance.runtime_s,
                instance.prewarm,
            )
        )

    def slept(self, instance: Instance, since: float, at: float, why: str) -> None:
        """`instance` slept from `since` to `at`, holding no GPU; `why` it ended."""
        row = (instance.id, instance.model.name, instance.server, 0, str(instance.tier))
        peer = (instance.peer_source, instance.chain)
        asleep = (True, np.nan, np.nan, np.nan)  # and no load, no runtime
        self._rows.append(
            (*row, since, float("inf"), at, ENDS.index(why), *peer, *asleep, instance.prewarm)
        )

    def frame(self) -> pd.DataFrame:
        columns = [
            "instance",
            "model",
            "server",
            "gpus",
            "tier",
            "allocated_s",
            "ready_s",
            "ended_s",
            "end",
            "source",
            "chain",
            "asleep",
            "load_s",
            "download_s",
            "runtime_s",
            "prewarm",
        ]
        frame = pd.DataFrame(self._rows, columns=columns)
        frame = frame.sort_values(["instance", "allocated_s"], kind="stable")
        frame["ready_s"] = frame["ready_s"].replace(np.inf, np.nan)
        frame["end"] = pd.Categorical.from_codes(frame["end"].to_numpy(dtype=int), ENDS)
        return frame.reset_index(drop=True)
