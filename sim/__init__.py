"""thaw's discrete-event model of a serverless LLM inference cluster (SimPy).

`sim.run(policy, trace, cluster, seed)` simulates one run and returns its tables and
summary (`sim.api`); `python -m sim run|sweep` is the command line (`sim.runner.cli`).
The folders are the floors of the model, lowest first: `spec` and `schema`, `model`,
`queues` and `keep_alive`, `engine` and `config`, `results`, `runner` (docs/design.md).
"""

import importlib

# Imported on first use: `thaw_kernel`, which every package imports, must not pull in the
# simulator (and `traces`, which the simulator imports) with it.
_EXPORTS = {"run": "sim.api", "RunResult": "sim.api"}
__all__ = list(_EXPORTS)


def __getattr__(name: str) -> object:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'sim' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
