"""The checkpoint format: a flat blob of tensor bytes and a small JSON index beside it.

A checkpoint is a directory holding `tensors.bin` and `index.json`. Tensors lie in the
blob in forward-pass order, each starting on an `alignment` boundary (4 KiB by default)
so that aligned O_DIRECT reads and device views never split or misalign a tensor; the
gaps and the blob's tail are zeros, and the blob's size is a multiple of the alignment.
The index maps each name to dtype, shape, offset, byte size and two checksums (see
`calibration.checkpoint.checksum`), and records the format version, the alignment and the blob
size. This module validates an index completely before anyone trusts an offset in it,
and needs no torch: `python -m calibration.verify` runs without it.
"""

import itertools
import json
import math
from dataclasses import dataclass
from pathlib import Path

from thaw_kernel.bounds import ALIGNMENT, INDEX_FILE_BYTES
from thaw_kernel.errors import InputError
from thaw_kernel.user_files import check_regular_file, parse_json, read_text

FORMAT = "thaw-checkpoint"
VERSION = 1
INDEX_NAME = "index.json"
BLOB_NAME = "tensors.bin"
DEFAULT_ALIGNMENT = 4096

# Bytes per element of every dtype the format stores, by its torch name. Sub-byte and
# complex dtypes are left out: nobody ships weights in them.
DTYPE_SIZES = {
    "float64": 8,
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "float8_e4m3fnuz": 1,
    "float8_e5m2fnuz": 1,
    "float8_e8m0fnu": 1,
    "int64": 8,
    "int32": 4,
    "int16": 2,
    "int8": 1,
    "uint64": 8,
    "uint32": 4,
    "uint16": 2,
    "uint8": 1,
    "bool": 1,
}


class CheckpointError(InputError):
    """A checkpoint (or a source to convert) is malformed; the message names the file."""


@dataclass(frozen=True)
class TensorEntry:
    name: str
    dtype: str
    shape: tuple[int, ...]
    offset: int
    nbytes: int
    sum64: int
    crc32: int

    @property
    def summed_bytes(self) -> int:
        """Bytes covered by `sum64`: the tensor zero-padded to whole 8-byte words."""
        return -(-self.nbytes // 8) * 8

    def to_json(self) -> dict:
        return {
            "dtype": self.dtype,
            "shape": list(self.shape),
            "offset": self.offset,
            "nbytes": self.nbytes,
            "sum64": f"{self.sum64:016x}",
            "crc32": f"{self.crc32:08x}",
        }


@dataclass(frozen=True)
class Index:
    alignment: int
    total_bytes: int
    tensors: tuple[TensorEntry, ...]  # in blob order

    def to_json(self) -> str:
        document = {
            "format": FORMAT,
            "version": VERSION,
            "alignment": self.alignment,
            "total_bytes": self.total_bytes,
            "tensors": {entry.name: entry.to_json() for entry in self.tensors},
        }
        return json.dumps(document, indent=1) + "\n"


def is_checkpoint(path: Path) -> bool:
    """Whether `path` looks like a thaw checkpoint (so replacing it destroys nothing else)."""
    return (path / INDEX_NAME).is_file() and (path / BLOB_NAME).is_file()


def payload_bytes(checkpoint: Path) -> int:
    """The bytes of the tensors the checkpoint directory `checkpoint` holds (its blob less
    the alignment padding)."""
    return sum(entry.nbytes for entry in read_index(checkpoint).tensors)


def read_index(checkpoint: Path) -> Index:
    """The validated index of the checkpoint directory `checkpoint`."""
    path = checkpoint / INDEX_NAME
    if not checkpoint.is_dir():
        raise CheckpointError(f"{checkpoint}: not a checkpoint directory")
    text = read_text(path, INDEX_FILE_BYTES, CheckpointError)
    try:
        document = parse_json(text)
    except ValueError as err:
        raise CheckpointError(f"{path}: bad JSON: {err}") from None
    try:
        return parse_index(document)
    except ValueError as err:
        raise CheckpointError(f"{path}: {err}") from None


def check_blob_size(blob: Path, index: Index) -> None:
    check_regular_file(blob, CheckpointError)
    try:
        size = blob.stat().st_size
    except OSError as err:
        raise CheckpointError(f"{blob}: cannot open: {err.strerror}") from None
    if size != index.total_bytes:
        state = "truncated" if size < index.total_bytes else "too long"
        raise CheckpointError(f"{blob}: {state}: {size} bytes, the index says {index.total_bytes}")


def check_alignment(alignment: int) -> None:
    """Raise ValueError unless `alignment` is a power of two from 8 to `bounds.ALIGNMENT`."""
    if alignment < 8 or alignment & (alignment - 1) or alignment > ALIGNMENT:
        raise ValueError(f"alignment {alignment} is not a power of two from 8 to {ALIGNMENT}")


def parse_index(document: object) -> Index:
    """Check every field, bound and overlap; raise ValueError naming the first problem."""
    if not isinstance(document, dict):
        raise ValueError("the index is not a JSON object")
    if document.get("format") != FORMAT:
        raise ValueError(f"not a thaw checkpoint index (format is {document.get('format')!r})")
    if document.get("version") != VERSION:
        raise ValueError(f"unsupported format version {document.get('version')!r}")
    alignment = _integer(document, "alignment", "index")
    check_alignment(alignment)
    total = _integer(document, "total_bytes", "index")
    if total % alignment:
        raise ValueError(f"total_bytes {total} is not a multiple of the alignment {alignment}")
    tensors = document.get("tensors")
    if not isinstance(tensors, dict):
        raise ValueError("'tensors' is not a JSON object")
    entries = sorted(
        (_entry(name, fields, alignment, total) for name, fields in tensors.items()),
        key=lambda entry: entry.offset,
    )
    for before, after in itertools.pairwise(entries):
        if before.offset + before.summed_bytes > after.offset:
            raise ValueError(f"tensors {before.name!r} and {after.name!r} overlap")
    return Index(alignment, total, tuple(entries))


def _entry(name: str, fields: object, alignment: int, total: int) -> TensorEntry:
    where = f"tensor {name!r}"
    if not isinstance(fields, dict):
        raise ValueError(f"{where}: not a JSON object")
    dtype = fields.get("dtype")
    if not isinstance(dtype, str) or dtype not in DTYPE_SIZES:  # a list is not even hashable
        raise ValueError(f"{where}: unknown dtype {dtype!r}")
    shape = fields.get("shape")
    if not isinstance(shape, list) or not all(_is_count(dim) for dim in shape):
        raise ValueError(f"{where}: shape {shape!r} is not a list of non-negative integers")
    offset = _integer(fields, "offset", where)
    nbytes = _integer(fields, "nbytes", where)
    if nbytes != math.prod(shape) * DTYPE_SIZES[dtype]:
        raise ValueError(f"{where}: nbytes {nbytes} does not match shape {shape} of {dtype}")
    if offset % alignment:
        raise ValueError(f"{where}: offset {offset} is not aligned to {alignment}")
    sums = _hex(fields, "sum64", where), _hex(fields, "crc32", where)
    entry = TensorEntry(name, dtype, tuple(shape), offset, nbytes, *sums)
    if offset + entry.summed_bytes > total:
        raise ValueError(f"{where}: bytes {offset}..{offset + nbytes} lie past the end {total}")
    return entry


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _integer(fields: dict, key: str, where: str) -> int:
    value = fields.get(key)
    if not _is_count(value):
        raise ValueError(f"{where}: {key} {value!r} is not a non-negative integer")
    return value


def _hex(fields: dict, key: str, where: str) -> int:
    value = fields.get(key)
    try:
        return int(value, 16)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: {key} {value!r} is not a hexadecimal checksum") from None
