"""Migration figures of a profile: the round cost `a * tokens + b`, and one real migration.

A destination replica in its own process loads the reference model from its checkpoint
(through the real loader, from the page cache: the checkpoint was just written); then,
for each length, the time from sending that many tokens to its first token after them
(`Destination.stop_and_copy`: one message, a prefill over them, one answer) is timed
repeatedly; `calibration.measure.derivation` fits the round cost on the medians. One end-to-end
migration of a decoding request (`migrate`) is recorded beside them: its rounds, pause,
bytes sent and total time, the quantities the simulator's model of it predicts.
"""

from collections.abc import Sequence
from pathlib import Path

import torch

from calibration.measure.linear_fit import Points
from calibration.measure.measurement import Measurement
from calibration.migration.model import Transformer
from calibration.migration.token_migration import Destination, migrate


def measure_migration(
    model: Transformer,
    checkpoint: Path,
    destination_device: str,
    lengths: Sequence[int],
    runs: int,
    new_tokens: int,
    threads: int | None = None,
) -> tuple[dict[str, Measurement], Points]:
    """Measurements by name (see the module's docstring), and the rounds' medians by
    tokens moved.
    `threads`: the destination's torch threads (None: torch's default)."""
    results: dict[str, Measurement] = {}
    with Destination(model.config, checkpoint, destination_device, threads) as destination:
        results["migration_destination_startup"] = _once(destination.startup_s, "s")
        results["migration_destination_load"] = Measurement((destination.load_s,), "s", True)
        generator = torch.Generator().manual_seed(7)
        for length in lengths:
            tokens = torch.randint(model.config.vocab, (length,), generator=generator).tolist()
            destination.stop_and_copy(tokens)  # warm-up
            timings = tuple(destination.stop_and_copy(tokens) for _ in range(runs))
            results[f"migration_round_{length}_tokens"] = Measurement(timings, "s", False)
        prompt = torch.randint(model.config.vocab, (max(lengths),), generator=generator)
        record = migrate(model, prompt.tolist(), destination, new_tokens=new_tokens, start_after=1)
    medians = tuple(results[f"migration_round_{n}_tokens"].median for n in lengths)
    results |= {
        "migration_pause": _once(record.pause_s, "s"),
        "migration_total": _once(record.total_s, "s"),
        "migration_rounds": _once(len(record.rounds), "rounds"),
        "migration_bytes_sent": _once(
            sum(r.bytes_sent for r in record.rounds) + record.final.bytes_sent, "bytes"
        ),
    }
    return results, Points(tuple(map(float, lengths)), medians)


def _once(value: float, unit: str) -> Measurement:
    return Measurement((float(value),), unit, False)
