"""The calibration model: its cache is exact, its weights survive the checkpoint format."""

from dataclasses import replace

import pytest
import torch

from calibration.migration.model import (
    KVCache,
    ModelConfig,
    Transformer,
    greedy,
    load_model,
    save_model,
)

CONFIG = ModelConfig(layers=2, hidden=64, heads=4, kv_heads=2, vocab=128, max_positions=96)
PROMPT = [5, 17, 99, 3, 42, 8, 64, 1, 77, 23, 11, 90]


@pytest.fixture(scope="module")
def model() -> Transformer:
    return Transformer.random(CONFIG, seed=7)


def filled(cache: KVCache) -> list[torch.Tensor]:
    return [t[:, :, : cache.length] for t in cache.keys + cache.values]


def test_incremental_prefill_equals_one_prefill(model):
    tokens = [*PROMPT, *range(40, 60)]
    whole = model.new_cache()
    expected = model.prefill(tokens, whole)
    pieces = model.new_cache()
    for start, end in ((0, 7), (7, 8), (8, 25), (25, len(tokens))):
        logits = model.prefill(tokens[start:end], pieces)
    assert pieces.length == whole.length == len(tokens)
    torch.testing.assert_close(logits, expected, rtol=1e-5, atol=1e-5)
    for got, want in zip(filled(pieces), filled(whole), strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_decode_equals_the_full_forward_at_each_position(model):
    cache = model.new_cache()
    model.prefill(PROMPT[:1], cache)
    stepped = torch.stack([model.decode(token, cache) for token in PROMPT[1:]])
    full = model.lm_head(model.forward(torch.tensor([PROMPT]), model.new_cache())[0, 1:])
    torch.testing.assert_close(stepped, full, rtol=1e-5, atol=1e-5)


def test_batched_decode_matches_each_sequence_alone(model):
    prompts = [PROMPT, PROMPT[::-1], [t + 1 for t in PROMPT]]
    cache = model.new_cache(batch=len(prompts))
    model.forward(torch.tensor(prompts), cache)
    batched = model.decode_batch(torch.tensor([1, 2, 3]), cache)
    for row, (prompt, token) in enumerate(zip(prompts, [1, 2, 3], strict=True)):
        alone = model.new_cache()
        model.prefill(prompt, alone)
        torch.testing.assert_close(batched[row], model.decode(token, alone), rtol=1e-5, atol=1e-5)


def test_weights_are_seeded(model):
    again = Transformer.random(CONFIG, seed=7).state_dict()
    other = Transformer.random(CONFIG, seed=8).state_dict()
    for name, tensor in model.state_dict().items():
        assert torch.equal(tensor, again[name])
    assert not torch.equal(model.lm_head.weight, other["lm_head.weight"])


def test_checkpoint_round_trip_is_bit_identical(model, tmp_path):
    save_model(model, tmp_path / "ckpt")
    loaded = load_model(tmp_path / "ckpt", CONFIG)
    original = model.state_dict()
    assert loaded.state_dict().keys() == original.keys()
    for name, tensor in loaded.state_dict().items():
        want = original[name]
        assert tensor.dtype == want.dtype and tensor.shape == want.shape, name
        assert torch.equal(tensor.view(torch.uint8), want.view(torch.uint8)), name
    assert greedy(loaded, PROMPT, 20) == greedy(model, PROMPT, 20)


def test_half_precision_checkpoint_loads(tmp_path):
    config = ModelConfig(layers=1, hidden=32, heads=2, kv_heads=1, vocab=64, dtype=torch.bfloat16)
    model = Transformer.random(config, seed=1)
    save_model(model, tmp_path / "ckpt")
    loaded = load_model(tmp_path / "ckpt", config)
    assert loaded.lm_head.weight.dtype == torch.bfloat16
    prompt = [token % config.vocab for token in PROMPT]
    assert greedy(loaded, prompt, 5) == greedy(model, prompt, 5)


def test_a_mismatched_config_is_refused(model, tmp_path):
    save_model(model, tmp_path / "ckpt")
    with pytest.raises(ValueError, match="dtype"):
        load_model(tmp_path / "ckpt", replace(CONFIG, dtype=torch.float16))
    with pytest.raises(RuntimeError, match="size mismatch"):
        load_model(tmp_path / "ckpt", replace(CONFIG, vocab=100))


def test_the_cache_refuses_to_overflow(model):
    cache = model.new_cache()
    model.prefill(list(range(CONFIG.max_positions)), cache)
    with pytest.raises(ValueError, match="max_positions"):
        model.decode(1, cache)


def test_bad_head_counts_are_refused():
    with pytest.raises(ValueError, match="heads"):
        ModelConfig(hidden=64, heads=4, kv_heads=3)
