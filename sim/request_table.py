"""Every request's inputs and outcome, as preallocated columns indexed by request number.

The simulator writes each outcome into numpy arrays as it happens, so a finished request
costs a few dozen bytes and no Python object; the table becomes a DataFrame once, at the
end.
"""

import numpy as np
import pandas as pd

START_TIERS = ("warm", "dram", "ssd", "remote")
STATUSES = ("pending", "done", "dropped", "timeout")


class RequestTable:
    def __init__(self, trace: pd.DataFrame, models: list[str]) -> None:
        n = len(trace)
        self.n = n
        self.models = models
        self.request_id = (
            trace["request_id"].astype(str).to_numpy()
            if "request_id" in trace
            else np.arange(n).astype(str)
        )
        codes = {name: i for i, name in enumerate(models)}
        self.model = trace["model"].map(codes).to_numpy(dtype=np.int32)
        self.arrival = trace["arrival_s"].to_numpy(dtype=np.float64)
        self.input_tokens = trace["input_tokens"].to_numpy(dtype=np.int64)
        self.output_tokens = trace["output_tokens"].to_numpy(dtype=np.int64)
        self.server = np.full(n, -1, dtype=np.int32)
        self.tier = np.full(n, -1, dtype=np.int8)
        self.status = np.zeros(n, dtype=np.int8)
        self.placed_at = np.full(n, np.nan)
        self.estimate_s = np.full(n, np.nan)
        self.queue_s = np.full(n, np.nan)
        self.startup_s = np.full(n, np.nan)
        self.prefill_s = np.full(n, np.nan)
        self.ttft_s = np.full(n, np.nan)
        self.e2e_s = np.full(n, np.nan)

    def placed(self, i: int, now: float, server: int, tier: str, estimate_s: float) -> None:
        self.placed_at[i] = now
        self.server[i] = server
        self.tier[i] = START_TIERS.index(tier)
        self.estimate_s[i] = estimate_s

    def first_token(self, i: int, now: float, ready_at: float) -> None:
        """Split the TTFT: queue (to placement), startup (waiting for the instance), prefill."""
        placed = self.placed_at[i]
        start = max(placed, ready_at)
        self.queue_s[i] = placed - self.arrival[i]
        self.startup_s[i] = start - placed
        self.prefill_s[i] = now - start
        self.ttft_s[i] = now - self.arrival[i]

    def done(self, i: int, now: float) -> None:
        self.e2e_s[i] = now - self.arrival[i]
        self.status[i] = STATUSES.index("done")

    def frame(self) -> pd.DataFrame:
        """The requests table of DESIGN.md ("Results")."""
        # Code -1 (never placed) indexes the last entry, "none".
        tier = np.array([*START_TIERS, "none"], dtype=object)[self.tier]
        return pd.DataFrame(
            {
                "request_id": self.request_id,
                "model": pd.Categorical.from_codes(self.model, self.models),
                "arrival_s": self.arrival,
                "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
                "server": self.server,
                "tier": pd.Categorical(tier, categories=[*START_TIERS, "none"]),
                "queue_s": self.queue_s,
                "startup_s": self.startup_s,
                "migration_pause_s": np.zeros(self.n),
                "prefill_s": self.prefill_s,
                "ttft_s": self.ttft_s,
                "e2e_s": self.e2e_s,
                "status": pd.Categorical.from_codes(self.status, STATUSES),
                "estimated_startup_s": self.estimate_s,
            }
        )
