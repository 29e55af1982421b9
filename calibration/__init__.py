"""Calibration: the real checkpoint loader, measured on real machines.

`write_checkpoint` writes thaw's aligned checkpoint format (`calibration.format`),
`load` streams one onto a device, `calibration.verify.verify` checks one; `python -m
calibration.convert` and `python -m calibration.verify` are the command-line faces.
`benchmarks/loader.py` measures the loader against the raw device and today's loaders.
Token migration and `python -m calibration.measure` (the hardware profile `sim` reads)
arrive with their own issues; until then the simulator runs on the vendor figures in
`sim/defaults/cluster.toml`.
"""

from calibration.format import CheckpointError
from calibration.reader import DirectIOFallback, buffer_bytes, load
from calibration.writer import write_checkpoint

__all__ = [
    "CheckpointError",
    "DirectIOFallback",
    "buffer_bytes",
    "load",
    "write_checkpoint",
]
