"""`python -m calibration.convert SRC DST`: convert a checkpoint to thaw's aligned format.

SRC is a `.safetensors` file, a directory of sharded safetensors with its
`*.safetensors.index.json`, or a PyTorch state dict file (loaded with
`weights_only=True`). DST is written atomically: after a failure nothing is there.
"""

from pathlib import Path

from calibration.checkpoint.format import DEFAULT_ALIGNMENT, check_alignment
from calibration.checkpoint.sources import read_source
from calibration.checkpoint.writer import write_checkpoint
from thaw_kernel.command_line import Parser, run


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="python -m calibration.convert", description=__doc__)
    parser.add_argument("src", type=Path, help="safetensors file, sharded directory or .pt file")
    parser.add_argument("dst", type=Path, help="checkpoint directory to write")
    parser.add_argument(
        "--alignment",
        type=int,
        default=DEFAULT_ALIGNMENT,
        help=f"byte boundary each tensor starts on, a power of two (default {DEFAULT_ALIGNMENT})",
    )
    args = parser.parse_args(argv)
    try:
        check_alignment(args.alignment)
    except ValueError as err:
        parser.error(f"--alignment: {err}")

    def body() -> None:
        index = write_checkpoint(read_source(args.src), args.dst, args.alignment)
        print(f"{args.dst}: {len(index.tensors)} tensors, {index.total_bytes} bytes")

    return run(parser.prog, body)
