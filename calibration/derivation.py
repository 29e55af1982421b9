"""From raw measurements to the derived parameters the simulator runs on.

Each derived number is one measured figure or one fitted line, chosen to be what the
simulator's model means by it (sim/profile.py documents the fields):

- `ssd_read_bytes_per_s`: the real loader, cold, from the measured disk to the device;
- `dram_to_gpu_bytes_per_s`: the real loader, warm: a checkpoint held in host memory
  (the page cache), moved onto the device by the same code a DRAM-cache load runs;
- `instance_startup_s`: a fresh process importing torch and creating its context;
- `decode_step_s`, `decode_step_per_request_s`: the decode step at batch 1, and what
  each extra request adds (the decode line's slope);
- `recompute_tokens_per_s`: the inverse slope of the prefill line (through the origin);
- `migration_fixed_s`, `migration_per_token_s`: the intercept and slope of the
  stop-and-copy round line.

The remote store's network is not measured (one box has none to measure), so the
profile leaves the cluster's own figure in place. What the numbers could not say
honestly (a negative fitted intercept, recompute no faster than decode) goes into the
notes, not under the rug.
"""

from calibration.linear_fit import Line
from calibration.measurement import Measurement
from calibration.plausibility import ImpossibleProfile


def derive(
    measurements: dict[str, Measurement],
    decode: Line,
    prefill: Line,
    migration: Line,
    model_bytes: int,
) -> tuple[dict[str, float], list[str]]:
    """The derived parameters and the notes that qualify them."""
    notes = []
    per_request = decode.slope
    if per_request < 0:
        notes.append(
            f"decode_step_per_request_s: the fitted slope was {per_request:.3g} s "
            "(steps did not grow with the batch, within noise); recorded as 0"
        )
        per_request = 0.0
    fixed = migration.intercept
    if fixed < 0:
        notes.append(f"migration_fixed_s: the fitted intercept was {fixed:.3g} s; recorded as 0")
        fixed = 0.0
    for name, line in (("prefill", prefill), ("migration round", migration)):
        if line.slope <= 0:
            raise ImpossibleProfile(f"{name} time did not grow with the tokens: timings too noisy")
    derived = {
        "ssd_read_bytes_per_s": measurements["loader_cold"].median,
        "dram_to_gpu_bytes_per_s": measurements["loader_warm"].median,
        "instance_startup_s": measurements["instance_startup"].median,
        "reference_model_bytes": float(model_bytes),
        "decode_step_s": decode.at(1),
        "decode_step_per_request_s": per_request,
        "recompute_tokens_per_s": 1 / prefill.slope,
        "migration_fixed_s": fixed,
        "migration_per_token_s": migration.slope,
    }
    decode_tokens_per_s = 1 / derived["decode_step_s"]
    if derived["recompute_tokens_per_s"] <= decode_tokens_per_s:
        notes.append(
            f"recompute ({derived['recompute_tokens_per_s']:.0f} tokens/s) is not faster than "
            f"decode ({decode_tokens_per_s:.0f} tokens/s) on this hardware: the design "
            "expects it to be, and token migration gains less here"
        )
    rates = [
        int(name.split("_")[1]) / measurements[name].median
        for name in measurements
        if name.startswith("prefill_")
    ]
    if rates:
        notes.append(
            f"prefill ran at {min(rates):.0f}-{max(rates):.0f} tokens/s over the prompt "
            "lengths measured (attention costs more per token in long prompts); "
            "recompute_tokens_per_s is the rate that fits them best"
        )
    return derived, notes
