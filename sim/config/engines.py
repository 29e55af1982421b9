"""`[engines.NAME]` tables: the steps an engine's start-up is made of (fixed, CPU-bound
and load stages, in sequence or overlapped), whether its first prefill executes while
the checkpoint loads, and how it sleeps (docs/startup-stages.md)."""

from typing import Any

from sim.config.fields import flag, identifier, non_negative, positive, sub_table
from sim.config.sleep import parse_sleep
from sim.spec import SleepSpec
from thaw_kernel.errors import InputError
from thaw_kernel.stages import COPY, CPU, FIXED, LOAD, Stage, Step


def parse_engines(
    raw: dict,
) -> tuple[dict[str, tuple[Step, ...]], frozenset[str], dict[str, SleepSpec]]:
    """Each engine's start-up steps, those that execute while loading, and how those with
    a `sleep` table sleep; errors name the engine, the entry and the key."""
    engines = {}
    overlapped = set()
    sleep = {}
    for name, engine in raw.items():
        where = f"engines.{name}"
        engine = sub_table(engine, where)
        for key in engine:
            if key not in ("stages", "execute_while_load", "sleep"):
                raise InputError(
                    f"{where}.{key}: unknown key (expected stages, execute_while_load, sleep)"
                )
        entries = engine.get("stages")
        if not isinstance(entries, list) or not entries:
            raise InputError(f"{where}.stages: expected a non-empty list of stages")
        steps = []
        for i, entry in enumerate(entries):
            if isinstance(entry, list):
                if not entry:
                    raise InputError(f"{where}.stages[{i}]: an empty list of overlapped stages")
                steps.append(
                    tuple(_stage(s, f"{where}.stages[{i}][{j}]") for j, s in enumerate(entry))
                )
            else:
                steps.append((_stage(entry, f"{where}.stages[{i}]"),))
        stages = [stage for step in steps for stage in step]
        names = [stage.name for stage in stages]
        for stage in stages:
            if names.count(stage.name) > 1:
                raise InputError(f"{where}.stages: stage {stage.name!r} appears twice")
        if sum(stage.kind == LOAD for stage in stages) != 1:
            raise InputError(f'{where}.stages: expected exactly one {{name = "load"}} stage')
        _check_copy(steps, where)
        engines[name] = tuple(steps)
        if _execute_while_load(engine, where, steps[-1]):
            overlapped.add(name)
        if "sleep" in engine:
            sleep[name] = parse_sleep(engine["sleep"], f"{where}.sleep")
    return engines, frozenset(overlapped), sleep


def _check_copy(steps: list[Step], where: str) -> None:
    """At most one copy stage, in a step after the load's: the weights must be in host
    memory before the engine copies them."""
    copy_steps = [i for i, step in enumerate(steps) for s in step if s.kind == COPY]
    if len(copy_steps) > 1:
        raise InputError(f'{where}.stages: at most one {{name = "copy"}} stage')
    load_step = next(i for i, step in enumerate(steps) for s in step if s.kind == LOAD)
    if copy_steps and copy_steps[0] <= load_step:
        raise InputError(f"{where}.stages: the copy stage must come in a step after the load's")


def _execute_while_load(engine: dict, where: str, last: Step) -> bool:
    """The engine's `execute_while_load` switch; the prefill can only pipeline behind a
    load that is the start-up's last step, alone (the engine is ready when it ends)."""
    try:
        on = flag(engine.get("execute_while_load", False))
    except ValueError as err:
        raise InputError(f"{where}.execute_while_load: {err}") from None
    if on and (len(last) != 1 or last[0].kind != LOAD):
        raise InputError(
            f"{where}.execute_while_load: needs the load alone as the last step of stages"
        )
    return on


def _stage(raw: Any, where: str) -> Stage:
    """`{name = "load"}`, `{name = "copy"}`, `{name, cpu_seconds}` (CPU-bound) or `{name,
    seconds}` (fixed)."""
    raw = sub_table(raw, where)
    for key in raw:
        if key not in ("name", "cpu_seconds", "seconds"):
            raise InputError(f"{where}.{key}: unknown key (expected name, cpu_seconds, seconds)")
    try:
        name = identifier(raw.get("name"))
    except ValueError as err:
        raise InputError(f"{where}.name: {err}") from None
    given = [key for key in ("cpu_seconds", "seconds") if key in raw]
    if name in (LOAD, COPY):
        if given:
            raise InputError(f"{where}.{given[0]}: the {name} stage takes no duration")
        return Stage(name, name)
    if len(given) != 1:
        raise InputError(f"{where}: stage {name!r} needs cpu_seconds or seconds (one of them)")
    key = given[0]
    try:
        if key == "cpu_seconds":
            return Stage(name, CPU, positive(raw[key]))
        return Stage(name, FIXED, non_negative(raw[key]))
    except ValueError as err:
        raise InputError(f"{where}.{key}: {err}") from None


def engine_of(model: str, value: Any, engines: dict[str, tuple[Step, ...]]) -> str:
    if not isinstance(value, str) or value not in engines:
        known = ", ".join(engines) or "none: add an [engines.NAME] table"
        raise InputError(f"models.{model}.engine: unknown engine {value!r} (defined: {known})")
    return value
