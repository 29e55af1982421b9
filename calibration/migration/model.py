"""A small Llama-like decoder in plain torch, with an explicit KV cache: what migration moves.

Token migration and the calibration run need a real model whose prefill (recompute) and
decode costs behave like a real LLM's, at a size that is a parameter: a few MB in tests,
several GB on a GPU. Nothing is downloaded: weights are random, drawn from a seeded
`torch.Generator` on the CPU (the same weights whatever the device), and saved and loaded
through thaw's aligned checkpoint format under Hugging Face Llama's tensor names, so the
loader streams them in forward-pass order. The architecture is Llama's: RMSNorm,
rotary position embeddings, grouped-query attention and a SwiGLU MLP, pre-norm.

The model is stateless; a `KVCache` holds one sequence (or one batch of sequences of the
same length): per layer a key and a value tensor preallocated to `max_positions`, and
the number of positions filled. `forward` appends tokens to it, so one prefill over a
prompt and a prefill over its pieces in turn fill the same cache.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Self

import torch
import torch.nn.functional as F
from torch import nn

from calibration.checkpoint.reader import load
from calibration.checkpoint.writer import write_checkpoint


@dataclass(frozen=True)
class ModelConfig:
    """The model's shape. `intermediate` is the SwiGLU width (Llama uses about 8/3 hidden)."""

    layers: int = 2
    hidden: int = 64
    heads: int = 4
    kv_heads: int = 2
    intermediate: int = 176
    vocab: int = 256
    max_positions: int = 512
    dtype: torch.dtype = torch.float32
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5

    def __post_init__(self) -> None:
        if self.hidden % self.heads or self.heads % self.kv_heads or self.head_dim % 2:
            raise ValueError(
                f"hidden {self.hidden} must split into {self.heads} heads of even size, and "
                f"heads into {self.kv_heads} key/value groups"
            )

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


@dataclass
class KVCache:
    """Per layer, keys and values of shape (batch, kv_heads, max_positions, head_dim)."""

    keys: list[torch.Tensor]
    values: list[torch.Tensor]
    length: int = 0

    @classmethod
    def empty(cls, config: ModelConfig, batch: int = 1, device: str | torch.device = "cpu") -> Self:
        shape = (batch, config.kv_heads, config.max_positions, config.head_dim)

        def zeros() -> list[torch.Tensor]:
            return [
                torch.zeros(shape, dtype=config.dtype, device=device) for _ in range(config.layers)
            ]

        return cls(zeros(), zeros())


class RMSNorm(nn.Module):
    def __init__(self, size: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(size))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # In fp32, as Llama does: a half-precision mean of squares loses the small ones.
        x32 = x.float()
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x32.to(x.dtype)


def _linear(inputs: int, outputs: int) -> nn.Linear:
    return nn.Linear(inputs, outputs, bias=False)


class Attention(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        head_dim = config.head_dim
        self.q_proj = _linear(config.hidden, config.heads * head_dim)
        self.k_proj = _linear(config.hidden, config.kv_heads * head_dim)
        self.v_proj = _linear(config.hidden, config.kv_heads * head_dim)
        self.o_proj = _linear(config.heads * head_dim, config.hidden)

    def forward(
        self,
        x: torch.Tensor,
        rope: tuple[torch.Tensor, torch.Tensor],
        keys: torch.Tensor,
        values: torch.Tensor,
        start: int,
    ) -> torch.Tensor:
        """Attend from the `n` new positions at `start..` over the cache, after writing them."""
        config = self.config
        batch, n, _ = x.shape
        end = start + n
        q = self.q_proj(x).view(batch, n, config.heads, config.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(batch, n, config.kv_heads, config.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(batch, n, config.kv_heads, config.head_dim).transpose(1, 2)
        cos, sin = rope[0][start:end], rope[1][start:end]
        keys[:, :, start:end] = _rotate(k, cos, sin)
        values[:, :, start:end] = v
        groups = config.heads // config.kv_heads
        k_all = keys[:, :, :end].repeat_interleave(groups, dim=1)
        v_all = values[:, :, :end].repeat_interleave(groups, dim=1)
        # New position i (absolute start + i) sees cached positions 0..start + i. A prefill
        # onto an empty cache says so with is_causal, which lets torch pick a fused kernel.
        causal = start == 0 and n > 1
        mask = None
        if start and n > 1:
            mask = torch.ones(n, end, dtype=torch.bool, device=x.device).tril(start)
        out = F.scaled_dot_product_attention(
            _rotate(q, cos, sin), k_all, v_all, attn_mask=mask, is_causal=causal
        )
        return self.o_proj(out.transpose(1, 2).reshape(batch, n, config.hidden))


class MLP(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.gate_proj = _linear(config.hidden, config.intermediate)
        self.up_proj = _linear(config.hidden, config.intermediate)
        self.down_proj = _linear(config.intermediate, config.hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(config.hidden, config.norm_eps)
        self.self_attn = Attention(config)
        self.post_attention_layernorm = RMSNorm(config.hidden, config.norm_eps)
        self.mlp = MLP(config)


class Transformer(nn.Module):
    """The decoder. Build one with `random`, `from_weights` or `load_model`, not directly."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        # Given a weight, nn.Embedding skips its random init: on the meta device (where
        # from_weights builds) that init's normal_ imports torch._dynamo, 1.5-3 s of every
        # fresh process that builds a model here (measured on the 2-core VM).
        embedding = torch.empty(config.vocab, config.hidden)
        self.embed_tokens = nn.Embedding(config.vocab, config.hidden, _weight=embedding)
        self.layers = nn.ModuleList(Layer(config) for _ in range(config.layers))
        self.norm = RMSNorm(config.hidden, config.norm_eps)
        self.lm_head = _linear(config.hidden, config.vocab)
        self.rope: tuple[torch.Tensor, torch.Tensor] = (torch.empty(0), torch.empty(0))

    @classmethod
    def from_weights(cls, config: ModelConfig, weights: Mapping[str, torch.Tensor]) -> Self:
        """A model whose parameters are `weights` themselves (no copy): a loaded buffer serves."""
        for name, tensor in weights.items():
            if tensor.dtype != config.dtype:
                raise ValueError(f"{name}: dtype {tensor.dtype}, the config says {config.dtype}")
        with torch.device("meta"):
            model = cls(config)
        model.load_state_dict(weights, strict=True, assign=True)
        model.requires_grad_(False).eval()
        model.rope = _rope_tables(config, model.lm_head.weight.device)
        return model

    @classmethod
    def random(cls, config: ModelConfig, seed: int = 0, device: str | torch.device = "cpu") -> Self:
        weights = random_weights(config, seed)
        return cls.from_weights(config, {k: v.to(device) for k, v in weights.items()})

    @property
    def device(self) -> torch.device:
        return self.lm_head.weight.device

    def new_cache(self, batch: int = 1) -> KVCache:
        return KVCache.empty(self.config, batch, self.device)

    @torch.inference_mode()
    def forward(self, tokens: torch.Tensor, cache: KVCache) -> torch.Tensor:
        """Append `tokens` (batch, n), on any device, to `cache`; the final normed states
        (batch, n, hidden)."""
        start, n = cache.length, tokens.shape[1]
        if start + n > self.config.max_positions:
            raise ValueError(
                f"{start} cached + {n} new positions exceed max_positions "
                f"{self.config.max_positions}"
            )
        x = self.embed_tokens(tokens.to(self.device))  # a GPU's embedding refuses CPU ids
        for layer, keys, values in zip(self.layers, cache.keys, cache.values, strict=True):
            x = x + layer.self_attn(layer.input_layernorm(x), self.rope, keys, values, start)
            x = x + layer.mlp(layer.post_attention_layernorm(x))
        cache.length = start + n
        return self.norm(x)

    @torch.inference_mode()
    def prefill(self, tokens: Sequence[int], cache: KVCache) -> torch.Tensor:
        """Append a batch-1 sequence of tokens; the logits (vocab,) at its last position."""
        ids = torch.tensor([list(tokens)], dtype=torch.long, device=self.device)
        return self.lm_head(self.forward(ids, cache)[0, -1])

    def decode(self, token: int, cache: KVCache) -> torch.Tensor:
        """Append one token (batch 1); the logits (vocab,) for the next."""
        return self.prefill([token], cache)

    @torch.inference_mode()
    def decode_batch(self, tokens: torch.Tensor, cache: KVCache) -> torch.Tensor:
        """Append one token per sequence, `tokens` (batch,); the logits (batch, vocab)."""
        return self.lm_head(self.forward(tokens.view(-1, 1), cache)[:, 0])


def _rope_tables(config: ModelConfig, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin (max_positions, head_dim) of every position's rotation, halves repeated."""
    half = torch.arange(0, config.head_dim, 2, dtype=torch.float64) / config.head_dim
    inverse_frequency = config.rope_theta**-half
    angles = torch.outer(torch.arange(config.max_positions, dtype=torch.float64), inverse_frequency)
    angles = torch.cat([angles, angles], dim=-1)
    return (
        angles.cos().to(device=device, dtype=config.dtype),
        angles.sin().to(device=device, dtype=config.dtype),
    )


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    first, second = x.chunk(2, dim=-1)
    return x * cos + torch.cat([-second, first], dim=-1) * sin


def random_weights(config: ModelConfig, seed: int = 0) -> dict[str, torch.Tensor]:
    """Seeded weights on the CPU, by parameter name: N(0, 1/fan_in) matrices, unit norms.

    Unit-variance activations keep the logits spread out, so greedy decoding has clear
    winners (no near-ties that rounding could flip) and does not collapse into one token.
    """
    generator = torch.Generator().manual_seed(seed)
    with torch.device("meta"):
        shapes = {name: p.shape for name, p in Transformer(config).state_dict().items()}
    weights = {}
    for name, shape in shapes.items():
        if name.endswith("norm.weight"):
            weight = torch.ones(shape)
        elif name == "embed_tokens.weight":
            weight = torch.randn(shape, generator=generator)
        else:
            weight = torch.randn(shape, generator=generator) / shape[1] ** 0.5
        weights[name] = weight.to(config.dtype)
    return weights


def save_model(model: Transformer, dst: Path) -> None:
    """Write the model's weights as an aligned thaw checkpoint at `dst`."""
    write_checkpoint(model.state_dict(), dst)


def load_model(path: Path, config: ModelConfig, device: str | torch.device = "cpu") -> Transformer:
    """Stream the checkpoint at `path` onto `device` with the real loader; the model on it."""
    return Transformer.from_weights(config, load(path, device))


def greedy(model: Transformer, prompt: Sequence[int], new_tokens: int) -> list[int]:
    """The `new_tokens` tokens greedy decoding produces after `prompt`: the reference run."""
    cache = model.new_cache()
    generated = [int(model.prefill(prompt, cache).argmax())]
    while len(generated) < new_tokens:
        generated.append(int(model.decode(generated[-1], cache).argmax()))
    return generated
