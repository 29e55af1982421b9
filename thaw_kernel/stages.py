"""A cold start as stages: what an instance does between its GPUs and its first prefill.

An engine's start-up is a sequence of steps; a step is one stage or several that run
overlapped (the step ends when its last stage does). A stage is the checkpoint load
(`LOAD`, over the server's tiered, shared links), CPU-bound work (`CPU`, `amount`
CPU-seconds on the server's host cores, shared with the other start-ups there), a fixed
wall time (`FIXED`, `amount` seconds), or the engine's copy of its checkpoint from host
memory onto its GPUs (`COPY`, over its own PCIe lanes, in a step after the load's: with
one, the load reads into host memory only, and a load from the DRAM cache has nothing
to read). A model without an engine starts as thaw always did: the fixed
`instance_startup_s`, then the load; where the cluster loads beside the start-up, the
two at once, then the copy (`default_steps`). Shared by the simulator, which runs the
steps, and the policies, which price them.
"""

from dataclasses import dataclass

LOAD, CPU, FIXED, COPY = "load", "cpu", "fixed", "copy"


@dataclass(frozen=True)
class Stage:
    name: str
    kind: str  # LOAD, CPU, FIXED or COPY
    amount: float = 0.0  # CPU-seconds (CPU) or seconds (FIXED); nothing for LOAD or COPY


Step = tuple[Stage, ...]  # stages that run overlapped


def default_steps(startup_s: float, beside: bool = False) -> tuple[Step, ...]:
    """The start-up of a model without an engine: a fixed cost, then the load; `beside`,
    the two overlapped (a checkpoint store reads into host memory while the engine
    starts), then the engine's copy onto its GPUs."""
    startup, load = Stage("startup", FIXED, startup_s), Stage("load", LOAD)
    if beside:
        return ((startup, load), (Stage("copy", COPY),))
    return ((startup,), (load,))


def copies(steps: tuple[Step, ...]) -> bool:
    """Whether a start-up of these steps copies its checkpoint from host memory onto its
    GPUs itself (its load then reads into host memory only)."""
    return any(stage.kind == COPY for step in steps for stage in step)
