"""A cold start as stages: what an instance does between its GPUs and its first prefill.

An engine's start-up is a sequence of steps; a step is one stage or several that run
overlapped (the step ends when its last stage does). A stage is the checkpoint load
(`LOAD`, over the server's tiered, shared links), CPU-bound work (`CPU`, `amount`
CPU-seconds on the server's host cores, shared with the other start-ups there) or a fixed
wall time (`FIXED`, `amount` seconds). A model without an engine starts as thaw always
did: the fixed `instance_startup_s`, then the load, or both at once where the cluster
loads beside the start-up (`default_steps`). Shared by the simulator, which runs the
steps, and the policies, which price them.
"""

from dataclasses import dataclass

LOAD, CPU, FIXED = "load", "cpu", "fixed"


@dataclass(frozen=True)
class Stage:
    name: str
    kind: str  # LOAD, CPU or FIXED
    amount: float = 0.0  # CPU-seconds (CPU) or seconds (FIXED); nothing for the load


Step = tuple[Stage, ...]  # stages that run overlapped


def default_steps(startup_s: float, beside: bool = False) -> tuple[Step, ...]:
    """The start-up of a model without an engine: a fixed cost, then the load; `beside`,
    the two overlapped (a checkpoint store reads while the engine starts)."""
    startup, load = Stage("startup", FIXED, startup_s), Stage("load", LOAD)
    return ((startup, load),) if beside else ((startup,), (load,))
