"""Checkpoints of a given size with a real model's tensor shapes and random bytes.

Loader measurements need realistic shapes (many mid-sized matrices, a few big ones) at a
size chosen by the user, not a real model's weights: nothing is downloaded.
"""

import torch


def llama_shapes(size: int) -> dict[str, tuple[int, ...]]:
    """Embeddings, as many Llama layers as fit in `size` bf16 bytes, final norm and head.

    The widest Llama hidden size whose embedding and head take at most a quarter of it:
    2048 for 1 GiB, 4096 (Llama-7B's) from 4 GiB up.
    """
    vocab = 32000
    widths = [width for width in (1024, 2048, 4096) if 4 * vocab * width <= size / 4]
    hidden = max(widths, default=512)
    inter = hidden * 43 // 16
    shapes = {"model.embed_tokens.weight": (vocab, hidden)}
    per_layer = 2 * (4 * hidden * hidden + 3 * hidden * inter + 2 * hidden)
    for layer in range(max(1, (size - 4 * vocab * hidden) // per_layer)):
        prefix = f"model.layers.{layer}"
        shapes[f"{prefix}.input_layernorm.weight"] = (hidden,)
        for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
            shapes[f"{prefix}.self_attn.{name}.weight"] = (hidden, hidden)
        shapes[f"{prefix}.post_attention_layernorm.weight"] = (hidden,)
        shapes[f"{prefix}.mlp.gate_proj.weight"] = (inter, hidden)
        shapes[f"{prefix}.mlp.up_proj.weight"] = (inter, hidden)
        shapes[f"{prefix}.mlp.down_proj.weight"] = (hidden, inter)
    shapes["model.norm.weight"] = (hidden,)
    shapes["lm_head.weight"] = (vocab, hidden)
    return shapes


def random_bf16(shapes: dict[str, tuple[int, ...]], seed: int = 0) -> dict[str, torch.Tensor]:
    """Seeded random bf16 bytes of each shape (any bit pattern, NaNs included: bytes only)."""
    generator = torch.Generator().manual_seed(seed)
    return {
        name: torch.randint(-(2**15), 2**15, shape, dtype=torch.int16, generator=generator).view(
            torch.bfloat16
        )
        for name, shape in shapes.items()
    }
