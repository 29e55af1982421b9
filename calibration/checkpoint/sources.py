"""Read the checkpoints people have today into a name -> tensor dict, for conversion.

Three sources: a `.safetensors` file; a directory of sharded safetensors with its
`*.safetensors.index.json` (the Hugging Face layout); any other file is a PyTorch state
dict, loaded with `weights_only=True` so a malicious pickle cannot run code.
"""

import json
import pickle
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file

from calibration.checkpoint.format import CheckpointError


def read_source(path: Path) -> dict[str, torch.Tensor]:
    if path.is_dir():
        return _read_sharded(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: no such file or directory")
    if path.suffix == ".safetensors":
        return _read_safetensors(path)
    return _read_state_dict(path)


def _read_safetensors(path: Path) -> dict[str, torch.Tensor]:
    try:
        return load_file(path)
    except (SafetensorError, OSError) as err:
        raise CheckpointError(f"{path}: not a readable safetensors file: {err}") from None


def _read_sharded(directory: Path) -> dict[str, torch.Tensor]:
    indexes = sorted(directory.glob("*.safetensors.index.json"))
    if len(indexes) != 1:
        found = ", ".join(index.name for index in indexes) or "none"
        raise CheckpointError(f"{directory}: expected one *.safetensors.index.json, found {found}")
    try:
        weight_map = json.loads(indexes[0].read_text(encoding="utf-8"))["weight_map"]
        shards = sorted(set(weight_map.values()))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise CheckpointError(f"{indexes[0]}: not a safetensors index ({err})") from None
    tensors: dict[str, torch.Tensor] = {}
    for shard in shards:
        tensors.update(_read_safetensors(directory / shard))
    missing = sorted(set(weight_map) - set(tensors))
    if missing:
        raise CheckpointError(f"{indexes[0]}: {len(missing)} tensors missing, e.g. {missing[0]!r}")
    return {name: tensors[name] for name in weight_map}


def _read_state_dict(path: Path) -> dict[str, torch.Tensor]:
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, OSError, ValueError) as err:
        reason = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise CheckpointError(f"{path}: not a loadable PyTorch state dict: {reason}") from None
    if not isinstance(state, dict) or not all(
        isinstance(key, str) and isinstance(value, torch.Tensor) for key, value in state.items()
    ):
        raise CheckpointError(f"{path}: not a state dict (a mapping of names to tensors)")
    return state
