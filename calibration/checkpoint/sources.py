"""Read the checkpoints people have today into a name -> tensor dict, for conversion.

Three sources: a `.safetensors` file; a directory of sharded safetensors with its
`*.safetensors.index.json` (the Hugging Face layout); any other file is a PyTorch state
dict, loaded with `weights_only=True` so a malicious pickle cannot run code.
"""

import pickle
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file

from calibration.checkpoint.format import CheckpointError
from thaw_kernel.user_files import check_regular_file, read_json


def read_source(path: Path) -> dict[str, torch.Tensor]:
    if path.is_dir():
        tensors = _read_sharded(path)
    elif not path.exists():
        raise CheckpointError(f"{path}: no such file or directory")
    elif not path.is_file():
        raise CheckpointError(f"{path}: not a regular file or a directory")
    elif path.suffix == ".safetensors":
        tensors = _read_safetensors(path)
    else:
        tensors = _read_state_dict(path)
    for name, tensor in tensors.items():
        if tensor.layout != torch.strided or tensor.is_quantized or tensor.is_meta:
            raise CheckpointError(
                f"{path}: tensor {name!r} is not a dense tensor ({tensor.layout}); "
                "convert it to a dense one first"
            )
    return tensors


def _read_safetensors(path: Path) -> dict[str, torch.Tensor]:
    check_regular_file(path, CheckpointError)
    try:
        return load_file(path)
    except (SafetensorError, OSError) as err:
        raise CheckpointError(f"{path}: not a readable safetensors file: {err}") from None


def _read_sharded(directory: Path) -> dict[str, torch.Tensor]:
    indexes = sorted(directory.glob("*.safetensors.index.json"))
    if len(indexes) != 1:
        found = ", ".join(index.name for index in indexes) or "none"
        raise CheckpointError(f"{directory}: expected one *.safetensors.index.json, found {found}")
    index = indexes[0]
    weight_map = _weight_map(index)
    tensors: dict[str, torch.Tensor] = {}
    for shard in sorted(set(weight_map.values())):
        for name, tensor in _read_safetensors(directory / shard).items():
            if name not in weight_map:
                raise CheckpointError(f"{directory / shard}: tensor {name!r} is not in {index}")
            if name in tensors:
                raise CheckpointError(f"{directory / shard}: tensor {name!r} is in two shards")
            if weight_map[name] != shard:
                raise CheckpointError(
                    f"{directory / shard}: tensor {name!r} is in this shard, but {index} "
                    f"places it in {weight_map[name]}"
                )
            tensors[name] = tensor
    missing = sorted(set(weight_map) - set(tensors))
    if missing:
        raise CheckpointError(f"{index}: {len(missing)} tensors missing, e.g. {missing[0]!r}")
    return {name: tensors[name] for name in weight_map}


def _weight_map(index: Path) -> dict[str, str]:
    """The index's tensor -> shard file map; every shard a plain file name beside it."""
    document = read_json(index, CheckpointError)
    weight_map = document.get("weight_map") if isinstance(document, dict) else None
    if not isinstance(weight_map, dict) or not weight_map:
        raise CheckpointError(f"{index}: not a safetensors index (no weight_map object)")
    for name, shard in weight_map.items():
        if not isinstance(shard, str) or not shard or Path(shard).name != shard:
            raise CheckpointError(
                f"{index}: weight_map[{name!r}]: expected a shard file name beside the "
                f"index, got {shard!r}"
            )
    return weight_map


def _read_state_dict(path: Path) -> dict[str, torch.Tensor]:
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, OSError, ValueError) as err:
        raise CheckpointError(
            f"{path}: not a loadable PyTorch state dict: {_reason(err)}"
        ) from None
    if not isinstance(state, dict) or not all(
        isinstance(key, str) and isinstance(value, torch.Tensor) for key, value in state.items()
    ):
        raise CheckpointError(f"{path}: not a state dict (a mapping of names to tensors)")
    return state


def _reason(err: Exception) -> str:
    """torch's reason in one line, without its advice to load with weights_only=False
    (which runs the pickle's code: thaw never does)."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    refused = [line for line in lines if line.startswith("WeightsUnpickler error:")]
    if refused:
        what = refused[0].removeprefix("WeightsUnpickler error:").split(". ")[0].strip()
        return f"it holds more than tensors ({what}), and thaw never runs a pickle's code"
    return lines[0] if lines else type(err).__name__
