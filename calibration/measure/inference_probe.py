"""Inference figures of a profile: decode steps by batch size, and prefill by prompt length.

Measured on `calibration.migration.model`'s decoder with random weights, at a size the profile
records (`reference_model_bytes`), since the simulator scales every catalog model's
speeds from it by weights per GPU. Decode steps are timed with a short context in the
cache at batch sizes from 1 up; prefills over prompts of typical lengths into a cache
allocated beforehand (as a serving replica keeps one). Every point is the median of
repeated timings after a warm-up; `calibration.measure.derivation` fits the cost models.
"""

from collections.abc import Callable, Sequence

import torch

from calibration.measure.linear_fit import Points
from calibration.measure.measurement import Measurement, seconds
from calibration.migration.model import KVCache, ModelConfig, Transformer

CONTEXT_TOKENS = 32  # already in the cache when decode steps are timed


def measure_decode(
    model: Transformer, batches: Sequence[int], steps: int
) -> tuple[dict[str, Measurement], Points]:
    """`decode_step_batch_{b}` in s for each batch size b, and their medians by b."""
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
    medians = tuple(results[f"decode_step_batch_{b}"].median for b in batches)
    return results, Points(tuple(map(float, batches)), medians)


def measure_prefill(
    model: Transformer, lengths: Sequence[int], runs: int
) -> tuple[dict[str, Measurement], Points]:
    """`prefill_{n}_tokens` in s for each prompt length n, and their medians by n."""
    results = {}
    cache = model.new_cache()
    for length in lengths:
        prompt = _tokens(model.config, 1, length)[0].tolist()

        def prefill(prompt: list[int] = prompt) -> None:
            cache.length = 0  # reuse the cache: a replica does not allocate one per request
            model.prefill(prompt, cache)

        timed = _synchronized(model, prefill)
        timed()  # warm-up
        results[f"prefill_{length}_tokens"] = Measurement(
            tuple(seconds(timed) for _ in range(runs)), "s", False
        )
    medians = tuple(results[f"prefill_{n}_tokens"].median for n in lengths)
    return results, Points(tuple(map(float, lengths)), medians)


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
