"""Inference figures of a profile: decode steps by batch size, and prefill by prompt length.

Measured on `calibration.model`'s decoder with random weights, at a size the profile
records (`reference_model_bytes`), since the simulator scales every catalog model's
speeds from it by weights per GPU. A decode step's time is a line in the batch size,
anchored at the step measured at batch 1 (the commonest batch in a serverless cluster,
and on a CPU a faster kernel than the rest), with the least-squares slope of what each
extra request adds; a prefill's time as a line
through the origin in the prompt length, the simulator's model of it, whose inverse
slope is the tokens per second of recompute (the rate at which a migration's
destination rebuilds a KV cache). Attention makes long prompts cost more per token, so
the rate depends on the lengths measured: they span typical prompts. Every point is the
median of repeated timings after a warm-up.
"""

from collections.abc import Callable, Sequence

import torch

from calibration.linear_fit import Line, fit_through_origin
from calibration.measurement import Measurement, seconds
from calibration.model import KVCache, ModelConfig, Transformer

CONTEXT_TOKENS = 32  # already in the cache when decode steps are timed


def measure_decode(
    model: Transformer, batches: Sequence[int], steps: int
) -> tuple[dict[str, Measurement], Line]:
    """`decode_step_batch_{b}` in s for each batch size b (1 first), and the line through
    batch 1's step whose slope fits the others best."""
    if batches[0] != 1 or len(batches) < 2:
        raise ValueError("decode batches must start at 1 and have another size")
    results = {}
    for batch in batches:
        cache = model.new_cache(batch)
        model.forward(_tokens(model.config, batch, CONTEXT_TOKENS), cache)
        last = _tokens(model.config, batch, 1).view(-1)

        def decode(last: torch.Tensor = last, cache: KVCache = cache) -> None:
            model.decode_batch(last, cache)

        step = _synchronized(model, decode)
        step()  # warm-up
        timings = tuple(seconds(step) for _ in range(steps))
        results[f"decode_step_batch_{batch}"] = Measurement(timings, "s", False)
    one = results["decode_step_batch_1"].median
    extra = fit_through_origin(
        [b - 1 for b in batches[1:]],
        [results[f"decode_step_batch_{b}"].median - one for b in batches[1:]],
    )
    return results, Line(extra.slope, one - extra.slope, extra.r2)


def measure_prefill(
    model: Transformer, lengths: Sequence[int], runs: int
) -> tuple[dict[str, Measurement], Line]:
    """`prefill_{n}_tokens` in s for each prompt length n, and the rate's line through them
    and the origin."""
    results = {}
    for length in lengths:
        prompt = _tokens(model.config, 1, length)[0].tolist()

        def prefill(prompt: list[int] = prompt) -> None:
            model.prefill(prompt, model.new_cache())

        timed = _synchronized(model, prefill)
        timed()  # warm-up
        results[f"prefill_{length}_tokens"] = Measurement(
            tuple(seconds(timed) for _ in range(runs)), "s", False
        )
    line = fit_through_origin(lengths, [results[f"prefill_{n}_tokens"].median for n in lengths])
    return results, line


def model_bytes(model: Transformer) -> int:
    return sum(p.numel() * p.element_size() for p in model.state_dict().values())


def _tokens(config: ModelConfig, batch: int, length: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(length * 1009 + batch)
    return torch.randint(config.vocab, (batch, length), generator=generator)


def _synchronized(model: Transformer, action: Callable[[], object]) -> Callable[[], None]:
    def run() -> None:
        action()
        if model.device.type == "cuda":
            torch.cuda.synchronize(model.device)

    return run
