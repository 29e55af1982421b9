"""How an engine sleeps (vLLM sleep mode): the `sleep = {level, gpu_memory}` table, at the
top of a cluster file or in an `[engines.NAME]` table (which then overrides it).

Level 1 moves the weights to the server's DRAM (waking is a host-to-GPU copy over the
instance's PCIe lanes); level 2 discards them (waking reloads them from the fastest tier).
Either way the engine's process, CUDA context and graphs stay, keeping `gpu_memory` bytes
on each of its GPUs, and waking needs no new start-up. How long an engine sleeps before
it stops is the keep-alive's `sleep=SECONDS` option (`sim.keep_alive`).
"""

from typing import Any

from sim.spec import SleepSpec
from thaw_kernel import bounds
from thaw_kernel.errors import InputError
from thaw_kernel.units import parse_size


def parse_sleep(raw: Any, where: str) -> SleepSpec:
    """The table at `where`; InputError names the key."""
    if not isinstance(raw, dict):
        raise InputError(f"{where}: expected a table {{level = 1 or 2, gpu_memory = SIZE}}")
    for key in raw:
        if key not in ("level", "gpu_memory"):
            raise InputError(f"{where}.{key}: unknown key (expected level, gpu_memory)")
    for key in ("level", "gpu_memory"):
        if key not in raw:
            raise InputError(f"{where}.{key}: missing")
    level = raw["level"]
    if level not in (1, 2) or isinstance(level, bool):
        raise InputError(f"{where}.level: expected 1 or 2, got {level!r}")
    try:
        memory = parse_size(raw["gpu_memory"])
    except ValueError as err:
        raise InputError(f"{where}.gpu_memory: {err}") from None
    if not 0 < memory <= bounds.BYTES:
        raise InputError(f"{where}.gpu_memory: expected a positive size up to 2^60 bytes")
    return SleepSpec(level, memory)
