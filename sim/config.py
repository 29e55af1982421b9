"""The cluster configuration: TOML on disk, validated into frozen dataclasses.

A user file is laid over the bundled defaults (`sim/defaults/cluster.toml`): top-level
scalars and the keys of `[workload]` and `[migration]` override one by one; `[[servers]]`
and `[models]`, when given, replace the default lists whole (a study chooses its own
hardware and catalog), and a server group's missing keys take the first default group's
values. Every error names
the file and the key.
"""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli_w

from sim.common import bounds
from sim.common.errors import InputError
from sim.common.stages import CPU, FIXED, LOAD, Stage, Step, default_steps
from sim.common.toml_file import default_cluster, read_toml
from sim.common.units import parse_bandwidth, parse_size
from sim.keep_alive import check_keep_alive, make_keep_alive
from sim.profile import apply as apply_profile
from sim.profile import read_profile
from sim.queues import queue_names
from sim.sleep_spec import SleepSpec, parse_sleep

# A model's transformer layers when its catalog entry states none: Llama-2-7B's and
# OPT-6.7B's 32 (`num_hidden_layers` in their model cards). Only execute-while-load uses it.
DEFAULT_LAYERS = 32
# A model's TTFT service-level objective when its catalog entry states none: a round
# figure, the order of a cold start from SSD of the default catalog's larger models.
DEFAULT_TTFT_SLO_S = 10.0


@dataclass(frozen=True)
class ServerGroup:
    """`count` identical servers. Sizes in bytes, bandwidths in bytes/s."""

    name: str
    count: int
    gpus: int
    gpu_memory: int
    dram: int
    ssd: int
    ssd_read: float
    network: float
    pcie: float
    host_cores: float  # effective CPU cores the CPU-bound start-up stages share (fluid)
    servers_per_host: int = 1  # consecutive servers whose start-ups share one host's cores
    # Peer loading only (docs/peer-loading.md): GPU-to-GPU per GPU, and the server's NIC on
    # the compute network (not the storage `network`); 0 while peer loading is off.
    gpu_link: float = 0.0
    compute_network: float = 0.0

    def can_host(self, gpus: int, weights: int) -> bool:
        """Whether one server of this group can run an instance needing `gpus` GPUs."""
        return self.gpus >= gpus and self.gpu_memory * gpus >= weights


@dataclass(frozen=True)
class ModelSpec:
    """A catalog entry: checkpoint size, GPUs per instance, inference speed, placement."""

    name: str
    weights: int
    gpus: int
    prefill_tokens_per_s: float
    decode_step_s: float
    decode_step_per_request_s: float
    max_batch: int
    ssd_servers: tuple[int, ...]
    ttft_slo_s: float = DEFAULT_TTFT_SLO_S  # what SLO attainment and `edf` measure against
    prefill_fixed_s: float = 0.0  # per forward pass, beside the per-token rate
    prefill_waits_for_step: bool = False  # a prefill waits for the decode step in progress
    engine: str = ""  # the start-up's stages (`ClusterConfig.engines`); "" for the default
    layers: int = DEFAULT_LAYERS  # the granularity of execute-while-load (`sim.overlap`)

    def decode_step(self, batch: int) -> float:
        """Seconds per decode step when `batch` requests decode together."""
        return self.decode_step_s + self.decode_step_per_request_s * (batch - 1)

    def prefill_s(self, tokens: int) -> float:
        """Seconds to prefill a prompt of `tokens` tokens."""
        return tokens / self.prefill_tokens_per_s + self.prefill_fixed_s


@dataclass(frozen=True)
class MigrationSpec:
    """Live migration's cost model: each round sends tokens and recomputes their KV cache.

    A round over n tokens takes `round_overhead_s + n * bytes_per_token / network +
    n / recompute rate`, the `a * n + b` of ServerlessLLM; the recompute rate is the
    model's prefill rate (recomputing a KV cache is a prefill). Rounds stop once a round
    saw fewer than `stop_tokens` new tokens, or after `max_rounds`.
    """

    bytes_per_token: float
    round_overhead_s: float
    stop_tokens: float
    max_rounds: int


@dataclass(frozen=True)
class ClusterConfig:
    servers: tuple[ServerGroup, ...]
    models: dict[str, ModelSpec]  # in catalog (popularity) order
    keep_alive_s: float
    instance_startup_s: float
    zipf_exponent: float
    migration: MigrationSpec
    resolved: dict[str, Any]  # the normalised table, written back as config.toml
    queue: str = "fifo"  # the queue discipline (`sim.queues`)
    keep_alive: str = "fixed"  # the keep-alive policy, NAME[:params] (`sim.keep_alive`)
    engines: dict[str, tuple[Step, ...]] | None = None  # start-up steps by engine name
    peer_loading: bool = False  # load from warm instances' GPUs (docs/peer-loading.md)
    # Engines whose first prefill runs behind the load (`execute_while_load`, `sim.overlap`).
    overlapped: frozenset[str] = frozenset()
    # How engines sleep (`sim.sleep_spec`): by engine name, "" for the top-level table.
    sleep: dict[str, SleepSpec] | None = None

    def sleep_of(self, model: str) -> SleepSpec | None:
        """How an instance of `model` sleeps: its engine's table, else the top-level one."""
        if not self.sleep:
            return None
        engine = self.models[model].engine
        return self.sleep.get(engine) if engine in self.sleep else self.sleep.get("")

    def pipelined(self, model: str) -> bool:
        """Whether the prefill of the request that starts an instance of `model` runs
        layer by layer behind its checkpoint load."""
        return self.models[model].engine in self.overlapped

    def steps(self, model: str) -> tuple[Step, ...]:
        """The start-up steps of `model`: its engine's, else the fixed cost then the load."""
        engine = self.models[model].engine
        if engine and self.engines:
            return self.engines[engine]
        return default_steps(self.instance_startup_s)

    @property
    def server_count(self) -> int:
        return sum(group.count for group in self.servers)

    def to_toml(self) -> str:
        return tomli_w.dumps(self.resolved)


# --- value parsers: each takes the raw TOML value and returns the normalised one ---


def _integer(value: Any, minimum: int, maximum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        wanted = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise ValueError(f"expected {wanted}, got {value!r}")
    if value > maximum:
        raise ValueError(f"expected at most {maximum} (sim/common/bounds.py), got {value!r}")
    return value


def _integers(maximum: int, minimum: int = 1) -> Callable[[Any], int]:
    return lambda value: _integer(value, minimum, maximum)


def _number(value: Any, *, positive: bool, low: float = 0.0, high: float = bounds.SECONDS) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"expected a number, got {value!r}")
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"expected a finite number, got {value!r}")
    if value < 0 or (positive and value == 0):
        raise ValueError(f"expected a {'positive' if positive else 'non-negative'} number")
    if value > high or (value and value < low):
        raise ValueError(
            f"expected a number from {low:g} to {high:g}{' or 0' * (not positive and low > 0)} "
            f"(sim/common/bounds.py), got {value!r}"
        )
    return float(value)


def _positive(value: Any) -> float:
    """A duration in seconds that must not be zero."""
    return _number(value, positive=True, low=bounds.SECONDS_MIN)


def _non_negative(value: Any) -> float:
    """A duration in seconds."""
    return _number(value, positive=False)


def _ranged(low: float, high: float, *, positive: bool = True) -> Callable[[Any], float]:
    return lambda value: _number(value, positive=positive, low=low, high=high)


def _size(value: Any) -> int:
    size = parse_size(value)
    if size <= 0:
        raise ValueError(f"expected a positive size, got {value!r}")
    if size > bounds.BYTES:
        raise ValueError(f"expected at most {bounds.BYTES} bytes (sim/common/bounds.py)")
    return size


def _bandwidth(value: Any) -> float:
    bandwidth = parse_bandwidth(value)
    if not bandwidth > 0 or bandwidth == float("inf"):
        raise ValueError(f"expected a positive bandwidth, got {value!r}")
    if not bounds.BANDWIDTH_MIN <= bandwidth <= bounds.BANDWIDTH_MAX:
        raise ValueError(
            f"expected a bandwidth from {bounds.BANDWIDTH_MIN:g} to {bounds.BANDWIDTH_MAX:g} "
            f"bytes/s (sim/common/bounds.py), got {value!r}"
        )
    return bandwidth


def _name(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"expected a non-empty string, got {value!r}")
    return value


def _server_indices(value: Any) -> list[int]:
    if not isinstance(value, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value
    ):
        raise ValueError(f"expected a list of server indices (integers >= 0), got {value!r}")
    return sorted(set(value))


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {value!r}")
    return value


def _queue(value: Any) -> str:
    if value not in queue_names():
        raise ValueError(f"unknown queue discipline {value!r} (known: {', '.join(queue_names())})")
    return value


Parser = Callable[[Any], Any]

_TOP: dict[str, Parser] = {
    "keep_alive_s": _non_negative,
    "keep_alive": check_keep_alive,
    "instance_startup_s": _non_negative,
    "queue": _queue,
}
_WORKLOAD: dict[str, Parser] = {"zipf_exponent": _ranged(0, bounds.ZIPF, positive=False)}
_MIGRATION: dict[str, Parser] = {
    "bytes_per_token": _ranged(1e-9, bounds.BYTES),
    "round_overhead_s": _non_negative,
    "stop_tokens": _ranged(1e-9, bounds.TOKENS),
    "max_rounds": _integers(bounds.MIGRATION_ROUNDS),
}
_SERVER: dict[str, Parser] = {
    "name": _name,
    "count": _integers(bounds.SERVERS),
    "gpus": _integers(bounds.GPUS_PER_SERVER),
    "gpu_memory": _size,
    "dram": _size,
    "ssd": _size,
    "ssd_read": _bandwidth,
    "network": _bandwidth,
    "pcie": _bandwidth,
    "host_cores": _ranged(bounds.HOST_CORES_MIN, bounds.HOST_CORES),
    "servers_per_host": _integers(bounds.SERVERS),
}
_MODEL: dict[str, Parser] = {
    "weights": _size,
    "gpus": _integers(bounds.GPUS_PER_SERVER),
    "prefill_tokens_per_s": _ranged(bounds.TOKEN_RATE_MIN, bounds.TOKEN_RATE_MAX),
    "decode_step_s": _positive,
    "decode_step_per_request_s": _non_negative,
    "max_batch": _integers(bounds.MAX_BATCH),
    "ssd_servers": _server_indices,
    "ssd_copies": _integers(bounds.SERVERS, minimum=0),
    "ttft_slo_s": _positive,
    "prefill_fixed_s": _non_negative,
    "prefill_waits_for_step": _flag,
    "layers": _integers(bounds.LAYERS),
}
_MODEL_DEFAULTS = {
    "decode_step_per_request_s": 0.0,
    "max_batch": 16,
    "ssd_servers": [],
    "ssd_copies": 0,
    "ttft_slo_s": DEFAULT_TTFT_SLO_S,
    "prefill_fixed_s": 0.0,
    "prefill_waits_for_step": False,
    "layers": DEFAULT_LAYERS,
}


# Tables whose keys the user overrides one by one.
_SECTIONS = ("workload", "migration")
# The other keys a cluster file may have.
_OPTIONAL = ("servers", "models", "engines", "profile", "sleep")


def _table(value: Any, key: str) -> dict:
    if not isinstance(value, dict):
        raise InputError(f"{key}: expected a table, got {value!r}")
    return value


def _parse_fields(raw: dict, fields: dict[str, Parser], where: str) -> dict[str, Any]:
    """Check for unknown and missing keys, then parse every field; errors name the key."""
    for key in raw:
        if key not in fields:
            raise InputError(f"{where}{key}: unknown key (expected one of {', '.join(fields)})")
    parsed = {}
    for key, parse in fields.items():
        if key not in raw:
            raise InputError(f"{where}{key}: missing")
        try:
            parsed[key] = parse(raw[key])
        except ValueError as err:
            raise InputError(f"{where}{key}: {err}") from None
    return parsed


def _merge(default: dict, user: dict) -> dict:
    """Lay the user's table over the defaults (see the module docstring)."""
    for key in user:
        if key not in (*_TOP, *_SECTIONS, *_OPTIONAL, _PEER):
            raise InputError(
                f"{key}: unknown key (expected keep_alive_s, keep_alive, instance_startup_s, "
                "queue, peer_loading, sleep, workload, migration, servers, models, engines, "
                "profile)"
            )
    taken = (*_TOP, "engines", "profile", "sleep", _PEER)  # as the user gives them
    merged = {**default, **{k: v for k, v in user.items() if k in taken}}
    for section in _SECTIONS:
        merged[section] = {**default[section], **_table(user.get(section, {}), section)}
    if "servers" in user:
        groups = user["servers"]
        if not isinstance(groups, list) or not groups:
            raise InputError("servers: expected at least one [[servers]] group")
        template = default["servers"][0]
        merged["servers"] = [
            {**template, **_table(group, f"servers[{i}]")} for i, group in enumerate(groups)
        ]
    if "models" in user:
        models = _table(user["models"], "models")
        if not models:
            raise InputError("models: the catalog is empty")
        merged["models"] = {name: _table(spec, f"models.{name}") for name, spec in models.items()}
    return merged


def _build(table: dict) -> ClusterConfig:
    top = _parse_fields({k: table[k] for k in _TOP}, _TOP, "")
    workload = _parse_fields(table["workload"], _WORKLOAD, "workload.")
    migration = _parse_fields(table["migration"], _MIGRATION, "migration.")
    peer = _peer_switch(table)
    groups = [
        _parse_fields(
            {k: v for k, v in group.items() if k not in _PEER_LINKS}, _SERVER, f"servers[{i}]."
        )
        for i, group in enumerate(table["servers"])
    ]
    links = [_peer_links(group, f"servers[{i}].", peer) for i, group in enumerate(table["servers"])]
    servers = tuple(ServerGroup(**group, **link) for group, link in zip(groups, links, strict=True))
    if peer:
        groups = [{**group, **link} for group, link in zip(groups, links, strict=True)]
    server_count = sum(group.count for group in servers)
    if server_count > bounds.SERVERS:
        raise InputError(
            f"servers: {server_count} servers in all; at most {bounds.SERVERS} "
            "(sim/common/bounds.py)"
        )
    if len(table["models"]) > bounds.MODELS:
        raise InputError(f"models: more than {bounds.MODELS} models (sim/common/bounds.py)")
    engines, overlapped, sleep = _engines(_table(table.get("engines", {}), "engines"))
    if "sleep" in table:
        sleep[""] = parse_sleep(table["sleep"], "sleep")
    if make_keep_alive(top["keep_alive"], 0.0).sleep_s and not sleep:
        raise InputError(
            f"keep_alive: {top['keep_alive']!r} lets instances sleep; that needs a sleep "
            "table {level, gpu_memory}, at the top or in an engine"
        )
    models: dict[str, ModelSpec] = {}
    model_tables: dict[str, dict] = {}
    for rank, (name, raw) in enumerate(table["models"].items()):
        fields = {k: v for k, v in raw.items() if k != "engine"}
        spec = _parse_fields({**_MODEL_DEFAULTS, **fields}, _MODEL, f"models.{name}.")
        spec["ssd_servers"] = _placement(name, spec, rank, server_count)
        spec["ssd_copies"] = 0  # resolved into the explicit list
        _check_model(name, spec, servers)
        model_tables[name] = spec
        fields = {k: v for k, v in spec.items() if k != "ssd_copies"}
        if "engine" in raw:
            fields["engine"] = spec["engine"] = _engine_of(name, raw["engine"], engines)
        models[name] = ModelSpec(
            name=name, **{**fields, "ssd_servers": tuple(fields["ssd_servers"])}
        )
    _check_ssd_space(models, servers)
    resolved = {
        **top,
        **({_PEER: True} if peer else {}),
        "workload": workload,
        "migration": migration,
        "servers": groups,
        "models": model_tables,
    }
    if "engines" in table:
        resolved["engines"] = table["engines"]
    if "sleep" in table:
        resolved["sleep"] = table["sleep"]
    if "profile" in table:  # provenance of the numbers a profile set: kept, not parsed
        resolved["profile"] = _table(table["profile"], "profile")
    return ClusterConfig(
        servers=servers,
        models=models,
        keep_alive_s=top["keep_alive_s"],
        instance_startup_s=top["instance_startup_s"],
        zipf_exponent=workload["zipf_exponent"],
        migration=MigrationSpec(**migration),
        resolved=resolved,
        queue=top["queue"],
        keep_alive=top["keep_alive"],
        engines=engines or None,
        peer_loading=peer,
        overlapped=overlapped,
        sleep=sleep or None,
    )


# --- peer loading (docs/peer-loading.md): off unless `peer_loading = true` ---

_PEER = "peer_loading"
# The links of a server group's GPUs to other GPUs, and their defaults (sources in the docs):
# an A40 NVLink bridge (112.5 GB/s both ways), a 100 GbE RDMA NIC.
_PEER_LINKS = {"gpu_link": "56.25GB/s", "compute_network": "100Gb/s"}


def _peer_switch(table: dict) -> bool:
    try:
        return _flag(table.get(_PEER, False))
    except ValueError as err:
        raise InputError(f"{_PEER}: {err}") from None


def _peer_links(group: dict, where: str, on: bool) -> dict[str, float]:
    """A group's peer links: given or defaulted when peer loading is on, refused when off."""
    given = [key for key in _PEER_LINKS if key in group]
    if not on:
        if given:
            raise InputError(f"{where}{given[0]}: only with peer_loading = true")
        return {}
    raw = {key: group.get(key, default) for key, default in _PEER_LINKS.items()}
    return _parse_fields(raw, dict.fromkeys(_PEER_LINKS, _bandwidth), where)


def _engines(
    raw: dict,
) -> tuple[dict[str, tuple[Step, ...]], frozenset[str], dict[str, SleepSpec]]:
    """Each engine's start-up steps, those that execute while loading, and how those with
    a `sleep` table sleep; errors name the engine, the entry and the key."""
    engines = {}
    overlapped = set()
    sleep = {}
    for name, engine in raw.items():
        where = f"engines.{name}"
        engine = _table(engine, where)
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
        engines[name] = tuple(steps)
        if _execute_while_load(engine, where, steps[-1]):
            overlapped.add(name)
        if "sleep" in engine:
            sleep[name] = parse_sleep(engine["sleep"], f"{where}.sleep")
    return engines, frozenset(overlapped), sleep


def _execute_while_load(engine: dict, where: str, last: Step) -> bool:
    """The engine's `execute_while_load` switch; the prefill can only pipeline behind a
    load that is the start-up's last step, alone (the engine is ready when it ends)."""
    try:
        on = _flag(engine.get("execute_while_load", False))
    except ValueError as err:
        raise InputError(f"{where}.execute_while_load: {err}") from None
    if on and (len(last) != 1 or last[0].kind != LOAD):
        raise InputError(
            f"{where}.execute_while_load: needs the load alone as the last step of stages"
        )
    return on


def _stage(raw: Any, where: str) -> Stage:
    """`{name = "load"}`, `{name, cpu_seconds}` (CPU-bound) or `{name, seconds}` (fixed)."""
    raw = _table(raw, where)
    for key in raw:
        if key not in ("name", "cpu_seconds", "seconds"):
            raise InputError(f"{where}.{key}: unknown key (expected name, cpu_seconds, seconds)")
    try:
        name = _name(raw.get("name"))
    except ValueError as err:
        raise InputError(f"{where}.name: {err}") from None
    given = [key for key in ("cpu_seconds", "seconds") if key in raw]
    if name == LOAD:
        if given:
            raise InputError(f"{where}.{given[0]}: the load stage takes no duration")
        return Stage(name, LOAD)
    if len(given) != 1:
        raise InputError(f"{where}: stage {name!r} needs cpu_seconds or seconds (one of them)")
    key = given[0]
    try:
        if key == "cpu_seconds":
            return Stage(name, CPU, _positive(raw[key]))
        return Stage(name, FIXED, _non_negative(raw[key]))
    except ValueError as err:
        raise InputError(f"{where}.{key}: {err}") from None


def _engine_of(model: str, value: Any, engines: dict[str, tuple[Step, ...]]) -> str:
    if not isinstance(value, str) or value not in engines:
        known = ", ".join(engines) or "none: add an [engines.NAME] table"
        raise InputError(f"models.{model}.engine: unknown engine {value!r} (defined: {known})")
    return value


def _placement(name: str, spec: dict, rank: int, count: int) -> list[int]:
    """Servers whose SSD holds the checkpoint at the start.

    Either listed (`ssd_servers`), or `ssd_copies` servers chosen round-robin by catalog
    rank (model k on servers k*c .. k*c+c-1, modulo the server count), which keeps a
    catalog's placement valid whatever the cluster size.
    """
    if spec["ssd_servers"] and spec["ssd_copies"]:
        raise InputError(f"models.{name}: give ssd_servers or ssd_copies, not both")
    for index in spec["ssd_servers"]:
        if index >= count:
            raise InputError(
                f"models.{name}.ssd_servers: server {index} does not exist "
                f"(the cluster has {count} servers, numbered from 0)"
            )
    copies = min(spec["ssd_copies"], count)
    return spec["ssd_servers"] or sorted({(rank * copies + j) % count for j in range(copies)})


def _check_model(name: str, spec: dict, servers: tuple[ServerGroup, ...]) -> None:
    """Refuse a model that no server can ever host."""
    if not any(group.can_host(spec["gpus"], spec["weights"]) for group in servers):
        raise InputError(
            f"models.{name}: needs {spec['gpus']} GPUs holding {spec['weights']} bytes, "
            "which no server group can provide"
        )


def _check_ssd_space(models: dict[str, ModelSpec], servers: tuple[ServerGroup, ...]) -> None:
    """Refuse a starting placement that overfills some server's SSD."""
    capacity = [group.ssd for group in servers for _ in range(group.count)]
    used = [0] * len(capacity)
    for spec in models.values():
        for index in spec.ssd_servers:
            used[index] += spec.weights
            if used[index] > capacity[index]:
                raise InputError(
                    f"models.{spec.name}: the checkpoints placed on server {index} need more "
                    f"than its SSD ({capacity[index]} bytes)"
                )


def read_config(path: str | Path | None = None, profile: str | Path | None = None) -> ClusterConfig:
    """The configuration in `path` laid over the defaults (the defaults alone when None),
    then the hardware numbers of the `profile` laid over that (`sim.profile`)."""
    table = default_cluster()
    if path is not None:
        path = Path(path)
        user = read_toml(path)
        try:
            table = _merge(table, user)
            config = _build(table)
        except InputError as err:
            raise InputError(f"{path}: {err}") from None
    else:
        config = _build(table)
    if profile is None:
        return config
    derived, digest = read_profile(Path(profile))
    applied = apply_profile(table, derived, config)
    table["profile"] = {"path": str(profile), "sha256": digest, "applied": applied}
    try:
        return _build(table)
    except InputError as err:
        raise InputError(f"{profile}: applied to the cluster: {err}") from None
