"""Calibration: real parts, measured on real machines.

`checkpoint`: thaw's aligned checkpoint format and its pipelined loader. `load` streams a
checkpoint onto a device and `write_checkpoint` writes one (both exported here);
`python -m calibration.convert` and `python -m calibration.verify` are its command-line
faces. `migration`: a small Llama-like decoder with seeded random weights and live
migration of a decoding request between two processes by token recomputation.
`measure`: `python -m calibration.measure` measures all of them on a machine and writes
the hardware profile `sim run --profile` reads (`calibration/profiles/` holds examples).
`remote`: a remote object store on loopback, each simulated server paced to its rate,
and a client that downloads checkpoints from it. `validate`: `python -m
calibration.validate` compares the simulator with a real replay.
"""

import importlib

# Imported on first use, so that `python -m calibration.verify` (no torch) starts fast.
_EXPORTS = {
    "CheckpointError": "calibration.checkpoint.format",
    "DirectIOFallback": "calibration.checkpoint.reader",
    "buffer_bytes": "calibration.checkpoint.reader",
    "load": "calibration.checkpoint.reader",
    "write_checkpoint": "calibration.checkpoint.writer",
}
__all__ = list(_EXPORTS)


def __getattr__(name: str) -> object:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'calibration' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
