"""`python -m calibration.verify DIR`: check a checkpoint's index, sizes and checksums.

Everything `load` checks (a valid index, bounds, no overlaps, known dtypes, the blob's
size, each tensor's `sum64`) plus each tensor's CRC-32, which catches what a sum cannot
(words swapped within a tensor). Prints one line and exits 0 if all is well; otherwise
one line naming the file and the first problem, exit 2.
"""

import zlib
from pathlib import Path

from calibration.checkpoint.checksum import MASK64, sum64
from calibration.checkpoint.direct_io import read_fully
from calibration.checkpoint.format import (
    BLOB_NAME,
    CheckpointError,
    Index,
    check_blob_size,
    read_index,
)
from thaw_kernel.command_line import Parser, run

PIECE_BYTES = 64 * 2**20  # a multiple of 8, so each piece sums whole words


def verify(checkpoint: Path) -> Index:
    """The checkpoint's index, once every check passed; CheckpointError otherwise."""
    index = read_index(checkpoint)
    blob = checkpoint / BLOB_NAME
    check_blob_size(blob, index)
    buffer = memoryview(bytearray(min(PIECE_BYTES, index.total_bytes)))
    with open(blob, "rb", buffering=0) as handle:
        for entry in index.tensors:
            total, crc = 0, 0
            for start in range(entry.offset, entry.offset + entry.summed_bytes, PIECE_BYTES):
                length = min(PIECE_BYTES, entry.offset + entry.summed_bytes - start)
                if read_fully(handle.fileno(), buffer[:length], start, length) < length:
                    raise CheckpointError(f"{blob}: ended while reading {entry.name!r}")
                total += sum64(buffer[:length])
                crc = zlib.crc32(buffer[: min(length, entry.offset + entry.nbytes - start)], crc)
            if total & MASK64 != entry.sum64 or crc != entry.crc32:
                raise CheckpointError(f"{blob}: tensor {entry.name!r} is corrupted (checksum)")
    return index


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="python -m calibration.verify", description=__doc__)
    parser.add_argument("checkpoint", type=Path, help="checkpoint directory to check")
    args = parser.parse_args(argv)

    def body() -> None:
        index = verify(args.checkpoint)
        print(f"{args.checkpoint}: ok ({len(index.tensors)} tensors, {index.total_bytes} bytes)")

    return run(parser.prog, body)
