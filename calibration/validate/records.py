"""What the real replay measured, per request and per instance, in seconds from its start.

A request's TTFT splits as the simulator's does (`sim.engine.request_table`): queue (arrival to
placement), startup (placement until its instance was ready: spawn, torch import and
checkpoint load), prefill (the rest, waiting behind other prompts included); an
instance's startup splits further into the process start (spawn to `started`, after
importing torch) and the load (`load_began` to `load_ended`: from `started`, or where a
checkpoint store reads the checkpoint, from the order it took as the process spawned to
its copy in DRAM, then the engine's copy of the weights from there), then the model's
build (to `ready`). A live migration adds to its
request's count, its pause (the source's stop to the target's resumption) and rounds, as
the simulator's table does; `generated` is the output tokens the request got in all, on
every instance it ran on.
"""

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd


@dataclass
class InstanceRecord:
    model: str
    server: int
    tier: str
    spawned: float = np.nan  # NaN until its GPU is free (a migration may hold it back)
    started: float = np.nan
    loaded: float = np.nan
    ready: float = np.nan
    stopped: float = np.nan
    started_cpu_s: float = np.nan  # the CPU-seconds the process had spent by `started`
    downloaded: float = np.nan  # from the remote store: the checkpoint on the server's SSD
    # Where the server's checkpoint store reads the checkpoint: the store's taking the
    # order (about `spawned`); NaN where the engine loads it itself, from `started`.
    load_began: float = np.nan
    stored: float = np.nan  # the store's DRAM copy published (with a store only)
    # With stores, the engine takes its weights from the DRAM copy once it has started
    # and the copy is there (its `copy`, to `loaded`): a start from DRAM then reads
    # nothing into host memory, its load empty.
    copies: bool = False


@dataclass
class Records:
    n: int
    instances: list[InstanceRecord] = field(default_factory=list)

    def __post_init__(self) -> None:
        nan = np.full(self.n, np.nan)
        self.arrival, self.placed_at, self.first, self.finished = (nan.copy() for _ in range(4))
        self.estimate_s = nan.copy()
        self.migration_pause_s = np.zeros(self.n)
        self.migrations, self.migration_rounds, self.generated = (
            np.zeros(self.n, dtype=int) for _ in range(3)
        )
        self.server = np.full(self.n, -1)
        self.instance = np.full(self.n, -1)
        self.tier = np.full(self.n, "", dtype=object)

    def placed(self, i: int, now: float, server: int, tier: str, instance: int) -> None:
        self.placed_at[i], self.server[i], self.instance[i] = now, server, instance
        self.tier[i] = tier if math.isnan(self.instances[instance].ready) else "warm"

    def created(self, model: str, server: int, tier: str, copies: bool = False) -> None:
        self.instances.append(InstanceRecord(model, server, tier, copies=copies))

    def instance_event(self, instance: int, event: str, t: float) -> None:
        setattr(self.instances[instance], event, t)

    def first_token(self, i: int, t: float) -> None:
        self.first[i] = t

    def done(self, i: int, t: float, generated: int) -> None:
        self.finished[i], self.generated[i] = t, generated

    def migrated(self, i: int, pause_s: float, rounds: int) -> None:
        self.migrations[i] += 1
        self.migration_pause_s[i] += pause_s
        self.migration_rounds[i] += rounds

    def instances_frame(self) -> pd.DataFrame:
        """One row per instance: model, server, tier and its phases' times; its load from
        `load_began` (`started` where the engine loads itself) to `load_ended` (the
        store's copy in DRAM where a store read it; with stores, a start from DRAM
        reads nothing, its load ending where it began; else `loaded`); and with stores
        its `copy_began` (the later of `started` and `stored`: the engine's copy of the
        weights runs to `loaded`), NaN otherwise."""
        frame = pd.DataFrame([vars(i) for i in self.instances])
        if frame.empty:
            return frame
        frame["load_began"] = frame["load_began"].fillna(frame["started"])
        empty = frame["copies"] & frame["stored"].isna()  # from DRAM: nothing to read
        frame["load_ended"] = frame["stored"].fillna(
            frame["loaded"].where(~empty, frame["started"])
        )
        after = frame[["started", "stored"]].max(axis=1)  # NaN columns skipped
        frame["copy_began"] = after.where(frame["copies"])
        return frame

    def frame(self) -> pd.DataFrame:
        """One row per request, with the simulator's TTFT parts."""
        ready = np.array([self.instances[k].ready for k in self.instance])
        startup = np.maximum(ready - self.placed_at, 0.0)
        return pd.DataFrame(
            {
                "arrival_s": self.arrival,
                "server": self.server,
                "tier": self.tier,
                "queue_s": self.placed_at - self.arrival,
                "startup_s": startup,
                "prefill_s": self.first - self.placed_at - startup,
                "ttft_s": self.first - self.arrival,
                "e2e_s": self.finished - self.arrival,
                # The policy's own estimate for the start it decided (NaN: none, or a join).
                "estimated_startup_s": self.estimate_s,
                "migrations": self.migrations,
                "migration_pause_s": self.migration_pause_s,
                "migration_rounds": self.migration_rounds,
                "generated": self.generated,
            }
        )
