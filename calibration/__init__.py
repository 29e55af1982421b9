"""Calibration: the real checkpoint loader, measured on real machines.

`write_checkpoint` writes thaw's aligned checkpoint format (`calibration.format`),
`load` streams one onto a device, `calibration.verify.verify` checks one; `python -m
calibration.convert` and `python -m calibration.verify` are the command-line faces.
`benchmarks/loader.py` measures the loader against the raw device and today's loaders.
`calibration.model` is a small Llama-like decoder with random seeded weights, and
`calibration.token_migration` moves a decoding request between two processes by token
recomputation. `python -m calibration.measure` measures all of them on a machine and
writes the hardware profile `sim run --profile` reads (`calibration.measure`'s docstring
lists what it runs; `calibration/profiles/` holds examples).
"""

import importlib

# Imported on first use, so that `python -m calibration.verify` (no torch) starts fast.
_EXPORTS = {
    "CheckpointError": "calibration.format",
    "DirectIOFallback": "calibration.reader",
    "buffer_bytes": "calibration.reader",
    "load": "calibration.reader",
    "write_checkpoint": "calibration.writer",
}
__all__ = list(_EXPORTS)


def __getattr__(name: str) -> object:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'calibration' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
