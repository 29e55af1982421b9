"""Forward-pass order of tensor names, so a streamed load finishes the first layers first.

Embeddings come first, then the layers by their numeric index (natural order: layer 2
before layer 10, which an alphabetical sort gets wrong), then everything else (the final
norm), and the output head last. Names are matched by convention (Llama, GPT-2, Mistral
and most Hugging Face models); a name no rule recognises still gets a stable place.
"""

import re

_EMBEDDING = re.compile(r"embed|(^|\.)(wte|wpe)(\.|$)")
_HEAD = re.compile(r"(^|\.)(lm_head|output|head)(\.|$)")
_LAYER_INDEX = re.compile(r"(^|\.)\d+(\.|$)")
_DIGITS = re.compile(r"(\d+)")


def forward_pass_key(name: str) -> tuple[int, tuple[str | int, ...]]:
    if _LAYER_INDEX.search(name):
        group = 1
    elif _EMBEDDING.search(name):
        group = 0
    elif _HEAD.search(name):
        group = 3
    else:
        group = 2
    natural = tuple(int(part) if part.isdigit() else part for part in _DIGITS.split(name))
    return group, natural


def forward_pass_order(names: list[str]) -> list[str]:
    return sorted(names, key=forward_pass_key)
