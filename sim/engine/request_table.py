"""Every request's inputs and outcome, as preallocated columns indexed by request number.

The simulator writes each outcome into preallocated columns as it happens, so a finished
request costs a few dozen bytes and no Python object; the table becomes a DataFrame once,
at the end. An outcome column is a Python `array` with a numpy view of the same memory:
what runs once a request reads and writes its cell through the array, everything else
through the view (a pickled copy of the table would part the two).

TTFT = queue_s + startup_s + prefill_s exactly: queue to the (last) placement, startup
until its instance was ready, prefill after that (waiting behind other prefills, and any
migration pause before its first token, included). A preempted request starts over: its
parts are those of the attempt that finished, the lost attempt counting as queueing.
`generated` counts the tokens each request received, summed over the instances that
served it; a request ends only when that equals its output length.
"""

from array import array

import numpy as np
import pandas as pd

from sim.schema import STATUSES
from thaw_kernel.tiers import START_TIERS

_PENDING, _DONE = STATUSES.index("pending"), STATUSES.index("done")
_TIER_CODE = {tier: code for code, tier in enumerate(START_TIERS)}  # a tier's column value


def _column(n: int, dtype: type, fill: float) -> tuple[array, np.ndarray]:
    """A column of `n` cells of `fill`: a Python array, and a numpy view of the same
    memory (both typed by the same C type code). A cell read or written through the
    array takes and gives a Python number, at about half the cost of a numpy scalar
    access."""
    cells = array(np.dtype(dtype).char, [fill]) * n
    return cells, np.frombuffer(cells, dtype=dtype)


def _contiguous(column: pd.Series, dtype: type) -> np.ndarray:
    """The column as a one-dimensional numpy array in one block of memory (a memoryview
    needs one); the trace's own memory where it already is."""
    return np.ascontiguousarray(column.to_numpy(dtype=dtype))


class RequestTable:
    def __init__(self, trace: pd.DataFrame, models: list[str]) -> None:
        n = len(trace)
        self.n = n
        self.models = models
        # As pandas strings, converted in one pass: numpy's conversion of numbers to its
        # own strings, then pandas' of those, took 4.2 s for 3M ids against 0.1 s.
        ids = trace["request_id"] if "request_id" in trace else pd.Series(np.arange(n))
        self.request_id = ids.astype(str).array
        codes = {name: i for i, name in enumerate(models)}
        # The trace's own columns, read where they are (a copy would cost memory).
        self.model = _contiguous(trace["model"].map(codes), np.int32)
        self.arrival = _contiguous(trace["arrival_s"], np.float64)
        self.input_tokens = _contiguous(trace["input_tokens"], np.int64)
        self.output_tokens = _contiguous(trace["output_tokens"], np.int64)
        # The same memory as memoryviews, for the reads once a request: a cell comes out
        # as a Python number at half the cost of numpy's `.item`.
        self.model_cells = memoryview(self.model)
        self.arrival_cells = memoryview(self.arrival)
        self.input_cells = memoryview(self.input_tokens)
        self.output_cells = memoryview(self.output_tokens)
        # Outcomes, written a request at a time.
        self._server, self.server = _column(n, np.int32, -1)
        self._instance, self.instance = _column(n, np.int64, -1)
        self._tier, self.tier = _column(n, np.int8, -1)
        self._status, self.status = _column(n, np.int8, 0)
        self._placed_at, self.placed_at = _column(n, np.float64, np.nan)
        self._estimate, self.estimate_s = _column(n, np.float64, np.nan)
        self._queue, self.queue_s = _column(n, np.float64, np.nan)
        self._startup, self.startup_s = _column(n, np.float64, np.nan)
        self._prefill, self.prefill_s = _column(n, np.float64, np.nan)
        self._ttft, self.ttft_s = _column(n, np.float64, np.nan)
        self._e2e, self.e2e_s = _column(n, np.float64, np.nan)
        self._generated, self.generated = _column(n, np.float64, 0.0)
        self.migration_pause_s = np.zeros(n)
        self.migration_rounds = np.zeros(n, dtype=np.int32)
        self.migration_bytes = np.zeros(n)
        self.migrations = np.zeros(n, dtype=np.int32)
        self.preemptions = np.zeros(n, dtype=np.int32)
        self.wasted_tokens = 0.0  # generated, then lost to a preemption

    def placed(
        self, i: int, now: float, server: int, instance: int, tier: str, estimate_s: float
    ) -> None:
        self._placed_at[i] = now
        self._server[i] = server
        self._instance[i] = instance
        self._tier[i] = _TIER_CODE[tier]
        self._estimate[i] = estimate_s

    def first_token(self, i: int, now: float, ready_at: float) -> None:
        """Split the TTFT: queue (to placement), startup (waiting for the instance), prefill."""
        placed = self._placed_at[i]
        arrival = self.arrival_cells[i]
        startup = self._startup[i]
        if startup != startup:  # NaN; else fixed when it moved before its prefill
            startup = max(placed, ready_at) - placed
            self._startup[i] = startup
        self._queue[i] = placed - arrival
        self._prefill[i] = now - placed - startup
        self._ttft[i] = now - arrival

    def moved_before_prefill(self, i: int, ready_at: float) -> None:
        """Migrated before its prefill: its startup ended when its first instance was ready."""
        if np.isnan(self.startup_s[i]):
            self.startup_s[i] = max(self.placed_at[i], ready_at) - self.placed_at[i]

    def migrated(
        self, i: int, pause_s: float, rounds: int, bytes_sent: float, generated: float
    ) -> None:
        self.migrations[i] += 1
        self.migration_pause_s[i] += pause_s
        self.migration_rounds[i] += rounds
        self.migration_bytes[i] += bytes_sent
        self.generated[i] += generated

    def preempted(self, i: int, generated: float) -> None:
        """Back to the queue: the attempt and the tokens it generated are lost."""
        self.preemptions[i] += 1
        self.wasted_tokens += self.generated[i] + generated  # earlier instances' tokens too
        self.generated[i] = 0.0
        self.server[i] = -1
        self.instance[i] = -1
        self.tier[i] = -1
        for column in (
            self.placed_at,
            self.estimate_s,
            self.queue_s,
            self.startup_s,
            self.prefill_s,
            self.ttft_s,
        ):
            column[i] = np.nan

    def done(self, i: int, now: float, generated: float) -> None:
        """Request `i` ended; `generated` tokens came from the instance that finished it."""
        if self._status[i] != _PENDING:
            raise RuntimeError(f"request #{i} ended twice; this is a bug in thaw")
        total = self._generated[i] + generated
        self._generated[i] = total
        wanted = self.output_cells[i]
        if abs(total - wanted) > 1e-6 * wanted:
            raise RuntimeError(
                f"request #{i} ended with {total} of its {wanted} tokens; this is a bug in thaw"
            )
        self._e2e[i] = now - self.arrival_cells[i]
        self._status[i] = _DONE

    def turned_away(self, i: int) -> None:
        """Request `i` ends unserved (`drop`): no placement, no TTFT."""
        if self.status.item(i) != _PENDING:
            raise RuntimeError(f"request #{i} turned away after it ended; this is a bug in thaw")
        self.status[i] = STATUSES.index("dropped")

    def time_out_pending(self) -> None:
        """The run stopped at its time limit: what has not ended, ends as `timeout`."""
        self.status[self.status == STATUSES.index("pending")] = STATUSES.index("timeout")

    def frame(self) -> pd.DataFrame:
        """The requests table of docs/results.md. Its outcome columns are the table's own
        arrays, not copies (a week's 27M requests: seconds and gigabytes); the trace's
        columns, read-only views of the trace, are copied, so the frame is writable."""
        names = [*(tier.value for tier in START_TIERS), "none"]
        tier = np.where(self.tier == -1, len(names) - 1, self.tier)  # -1: never placed
        return pd.DataFrame(
            {
                "request_id": self.request_id,
                "model": pd.Categorical.from_codes(self.model, self.models),
                "arrival_s": self.arrival.copy(),
                "input_tokens": self.input_tokens.copy(),
                "output_tokens": self.output_tokens.copy(),
                "server": self.server,
                "instance": self.instance,
                "tier": pd.Categorical.from_codes(tier, names),
                "queue_s": self.queue_s,
                "startup_s": self.startup_s,
                "migration_pause_s": self.migration_pause_s,
                "prefill_s": self.prefill_s,
                "ttft_s": self.ttft_s,
                "e2e_s": self.e2e_s,
                "status": pd.Categorical.from_codes(self.status, STATUSES),
                "estimated_startup_s": self.estimate_s,
                "migrations": self.migrations,
                "migration_rounds": self.migration_rounds,
                "migration_bytes": self.migration_bytes,
                "preemptions": self.preemptions,
            },
            copy=False,
        )
