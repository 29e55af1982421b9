"""Shared by the checkpoint and loader tests: small random checkpoints and byte comparisons."""

import math
from pathlib import Path

import torch

from calibration.checkpoint.writer import write_checkpoint

# Every dtype the format stores that this torch build has (fp8 where available).
DTYPES = [
    getattr(torch, name)
    for name in (
        "float64",
        "float32",
        "float16",
        "bfloat16",
        "float8_e4m3fn",
        "float8_e5m2",
        "float8_e4m3fnuz",
        "float8_e5m2fnuz",
        "float8_e8m0fnu",
        "int64",
        "int32",
        "int16",
        "int8",
        "uint64",
        "uint32",
        "uint16",
        "uint8",
        "bool",
    )
    if hasattr(torch, name)
]


def random_tensor(shape: tuple[int, ...], dtype: torch.dtype, seed: int) -> torch.Tensor:
    """Random bytes reinterpreted as `dtype` (NaNs and all), so every bit pattern counts."""
    generator = torch.Generator().manual_seed(seed)
    count = math.prod(shape)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=generator).bool()
    nbytes = count * torch.empty(0, dtype=dtype).element_size()
    raw = torch.randint(0, 256, (nbytes,), dtype=torch.uint8, generator=generator)
    return raw.view(dtype).reshape(shape)


def llama_like(layers: int = 3, hidden: int = 64, vocab: int = 100) -> dict[str, torch.Tensor]:
    """A tiny Llama-shaped state dict in bf16, with odd sizes and a scalar thrown in."""
    shapes = {"model.embed_tokens.weight": (vocab, hidden)}
    for layer in range(layers):
        prefix = f"model.layers.{layer}"
        shapes[f"{prefix}.input_layernorm.weight"] = (hidden,)
        for proj in ("q_proj", "k_proj", "v_proj", "o_proj"):
            shapes[f"{prefix}.self_attn.{proj}.weight"] = (hidden, hidden)
        shapes[f"{prefix}.mlp.gate_proj.weight"] = (3 * hidden + 1, hidden)
    shapes["model.norm.weight"] = (hidden,)
    shapes["lm_head.weight"] = (vocab, hidden)
    tensors = {
        name: random_tensor(shape, torch.bfloat16, seed)
        for seed, (name, shape) in enumerate(shapes.items())
    }
    tensors["model.rope_scale"] = torch.tensor(0.5, dtype=torch.float32)
    return tensors


def every_dtype() -> dict[str, torch.Tensor]:
    """One tensor per dtype, with shapes whose byte sizes are not multiples of 8."""
    tensors = {}
    for seed, dtype in enumerate(DTYPES):
        name = str(dtype).removeprefix("torch.")
        tensors[f"{name}.weight"] = random_tensor((3, 67), dtype, seed)
    tensors["empty.weight"] = torch.empty((0, 4), dtype=torch.float16)
    return tensors


def write(tmp_path: Path, tensors: dict[str, torch.Tensor], name: str = "ckpt", **kwargs) -> Path:
    path = tmp_path / name
    write_checkpoint(tensors, path, **kwargs)
    return path


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bit-identical: same dtype, shape and bytes (torch.equal says NaN != NaN)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    return torch.equal(a.cpu().reshape(-1).view(torch.uint8), b.cpu().reshape(-1).view(torch.uint8))
