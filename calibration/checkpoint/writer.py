"""Write a checkpoint atomically: built in a temporary directory, fsynced, renamed into place.

An interrupted or failed conversion leaves nothing at the destination that looks valid
(at most a hidden `.NAME.tmp-*` directory if the process is killed outright). An
existing destination is replaced only if it is empty or a checkpoint thaw wrote, unchanged
(`thaw_kernel.publish`).
"""

import zlib
from collections.abc import Mapping
from pathlib import Path

import torch

from calibration.checkpoint.checksum import padded_sum64
from calibration.checkpoint.format import (
    BLOB_NAME,
    DEFAULT_ALIGNMENT,
    DTYPE_SIZES,
    INDEX_NAME,
    CheckpointError,
    Index,
    TensorEntry,
    check_alignment,
)
from calibration.checkpoint.ordering import forward_pass_order
from thaw_kernel.errors import InputError
from thaw_kernel.publish import check_replaceable, staged_directory

KIND = "checkpoint"


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def write_checkpoint(
    tensors: Mapping[str, torch.Tensor], dst: Path, alignment: int = DEFAULT_ALIGNMENT
) -> Index:
    """Write `tensors` in forward-pass order as a checkpoint directory at `dst`."""
    check_alignment(alignment)
    for name, tensor in tensors.items():
        if _dtype_name(tensor.dtype) not in DTYPE_SIZES:
            raise CheckpointError(f"{name}: dtype {tensor.dtype} is not supported")
    check_destination(dst)
    with staged_directory(dst, KIND) as staging:
        with open(staging / BLOB_NAME, "wb") as blob:
            index = _write_blob(tensors, blob, alignment)
        (staging / INDEX_NAME).write_text(index.to_json(), encoding="utf-8")
    return index


def check_destination(dst: Path) -> None:
    """Refuse, before reading any source, a destination that holds something not ours."""
    try:
        check_replaceable(dst, KIND, "destination")
    except InputError as err:
        raise CheckpointError(str(err)) from None


def _write_blob(tensors: Mapping[str, torch.Tensor], blob, alignment: int) -> Index:
    entries = []
    position = 0
    for name in forward_pass_order(list(tensors)):
        tensor = tensors[name]
        data = memoryview(tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy())
        padding = -position % alignment
        blob.write(bytes(padding))
        position += padding
        blob.write(data)
        dtype, shape, sums = _dtype_name(tensor.dtype), tuple(tensor.shape), _sums(data)
        entries.append(TensorEntry(name, dtype, shape, position, len(data), *sums))
        position += len(data)
    padding = -position % alignment
    blob.write(bytes(padding))
    blob.flush()
    return Index(alignment, position + padding, tuple(entries))


def _sums(data: memoryview) -> tuple[int, int]:
    return padded_sum64(data), zlib.crc32(data)
