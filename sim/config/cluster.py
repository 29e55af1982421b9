"""The cluster configuration: TOML on disk, validated into frozen dataclasses.

A user file is laid over the bundled defaults (`sim/defaults/cluster.toml`): top-level
scalars and the keys of `[workload]` and `[migration]` override one by one; `[[servers]]`
and `[models]`, when given, replace the default lists whole (a study chooses its own
hardware and catalog), and a server group's missing keys take the first default group's
values. Every error names
the file and the key.
"""

from pathlib import Path
from typing import Any

from sim.config.catalog import generate
from sim.config.engines import engine_of, parse_engines
from sim.config.fields import (
    Parser,
    bandwidth,
    flag,
    identifier,
    integers,
    non_negative,
    parse_fields,
    positive,
    ranged,
    server_indices,
    size,
    sub_table,
)
from sim.config.overrides import check_sleep_table
from sim.config.profile import apply as apply_profile
from sim.config.profile import read_profile
from sim.config.sleep import parse_sleep
from sim.keep_alive import parse_keep_alive
from sim.queues import parse_queue
from sim.spec import (
    DEFAULT_LAYERS,
    DEFAULT_TTFT_SLO_S,
    ClusterConfig,
    MigrationSpec,
    ModelSpec,
    ServerGroup,
)
from thaw_kernel import bounds
from thaw_kernel.errors import InputError
from thaw_kernel.stages import copies
from thaw_kernel.toml_file import default_cluster, read_toml

_TOP: dict[str, Parser] = {
    "keep_alive_s": non_negative,
    "keep_alive": parse_keep_alive,
    "instance_startup_s": non_negative,
    "queue": parse_queue,
}
_WORKLOAD: dict[str, Parser] = {"zipf_exponent": ranged(0, bounds.ZIPF, positive=False)}
_MIGRATION: dict[str, Parser] = {
    "bytes_per_token": ranged(1e-9, bounds.BYTES),
    "round_overhead_s": non_negative,
    "stop_tokens": ranged(1e-9, bounds.TOKENS),
    "max_rounds": integers(bounds.MIGRATION_ROUNDS),
}
_SERVER: dict[str, Parser] = {
    "name": identifier,
    "count": integers(bounds.SERVERS),
    "gpus": integers(bounds.GPUS_PER_SERVER),
    "gpu_memory": size,
    "dram": size,
    "ssd": size,
    "ssd_read": bandwidth,
    "network": bandwidth,
    "pcie": bandwidth,
    "host_cores": ranged(bounds.HOST_CORES_MIN, bounds.HOST_CORES),
    "servers_per_host": integers(bounds.SERVERS),
}
_MODEL: dict[str, Parser] = {
    "weights": size,
    "gpus": integers(bounds.GPUS_PER_SERVER),
    "prefill_tokens_per_s": ranged(bounds.TOKEN_RATE_MIN, bounds.TOKEN_RATE_MAX),
    "decode_step_s": positive,
    "decode_step_per_request_s": non_negative,
    "max_batch": integers(bounds.MAX_BATCH),
    "ssd_servers": server_indices,
    "ssd_copies": integers(bounds.SERVERS, minimum=0),
    "ttft_slo_s": positive,
    "prefill_fixed_s": non_negative,
    "prefill_waits_for_step": flag,
    "layers": integers(bounds.LAYERS),
}
# A model's floor of instances (`ModelSpec.min_instances`): off (0) unless given.
_FLOOR: dict[str, Parser] = {
    "min_instances": integers(bounds.SERVERS * bounds.GPUS_PER_SERVER, minimum=0)
}
# Model keys parsed apart, and written back only when given.
_MODEL_OPTIONAL = ("engine", "compute_bytes", "min_instances")
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
_OPTIONAL = ("servers", "models", "catalog", "engines", "profile", "sleep")


def _merge(default: dict, user: dict) -> dict:
    """Lay the user's table over the defaults (see the module docstring)."""
    for key in user:
        if key not in (*_TOP, *_SECTIONS, *_OPTIONAL, *_SWITCHES):
            raise InputError(
                f"{key}: unknown key (expected keep_alive_s, keep_alive, instance_startup_s, "
                "queue, peer_loading, remote_download, load_beside_startup, sleep, workload, "
                "migration, servers, models, catalog, engines, profile)"
            )
    taken = (*_TOP, "engines", "profile", "sleep", *_SWITCHES)  # as the user gives them
    merged = {**default, **{k: v for k, v in user.items() if k in taken}}
    for section in _SECTIONS:
        merged[section] = {**default[section], **sub_table(user.get(section, {}), section)}
    if "servers" in user:
        groups = user["servers"]
        if not isinstance(groups, list) or not groups:
            raise InputError("servers: expected at least one [[servers]] group")
        template = default["servers"][0]
        merged["servers"] = [
            {**template, **sub_table(group, f"servers[{i}]")} for i, group in enumerate(groups)
        ]
    if "catalog" in user:
        if "models" in user:
            raise InputError("catalog: give [models] or [catalog], not both")
        merged["catalog"] = sub_table(user["catalog"], "catalog")
        del merged["models"]  # generated once the servers are known (`_generated`)
    if "models" in user:
        models = sub_table(user["models"], "models")
        if not models:
            raise InputError("models: the catalog is empty")
        merged["models"] = {
            name: sub_table(spec, f"models.{name}") for name, spec in models.items()
        }
    return merged


def _build(table: dict) -> ClusterConfig:
    top = parse_fields({k: table[k] for k in _TOP}, _TOP, "")
    workload = parse_fields(table["workload"], _WORKLOAD, "workload.")
    migration = parse_fields(table["migration"], _MIGRATION, "migration.")
    peer = _switch(table, _PEER)
    download = _switch(table, _DOWNLOAD)
    beside = _switch(table, _BESIDE)
    own = (*_PEER_LINKS, *_HOST_KEYS)  # keys parsed on their own, below
    groups = [
        parse_fields({k: v for k, v in group.items() if k not in own}, _SERVER, f"servers[{i}].")
        for i, group in enumerate(table["servers"])
    ]
    links = [_peer_links(group, f"servers[{i}].", peer) for i, group in enumerate(table["servers"])]
    disks = [_host_keys(group, f"servers[{i}].") for i, group in enumerate(table["servers"])]
    servers = tuple(
        ServerGroup(**group, **link, **disk)
        for group, link, disk in zip(groups, links, disks, strict=True)
    )
    if not peer:
        links = [{} for _ in groups]
    groups = [
        {**group, **link, **disk} for group, link, disk in zip(groups, links, disks, strict=True)
    ]
    server_count = sum(group.count for group in servers)
    if server_count > bounds.SERVERS:
        raise InputError(
            f"servers: {server_count} servers in all; at most {bounds.SERVERS} "
            "(thaw_kernel/bounds.py)"
        )
    if len(table["models"]) > bounds.MODELS:
        raise InputError(f"models: more than {bounds.MODELS} models (thaw_kernel/bounds.py)")
    engines, overlapped, sleep = parse_engines(sub_table(table.get("engines", {}), "engines"))
    copying = frozenset(name for name, steps in engines.items() if copies(steps))
    if peer and (beside or copying):
        raise InputError(
            "peer_loading: not modelled with an engine's copy from host memory (a copy "
            "stage, or load_beside_startup): a load from a peer lands on the GPUs"
        )
    if "sleep" in table:
        sleep[""] = parse_sleep(table["sleep"], "sleep")
    check_sleep_table(top["keep_alive"], bool(sleep), "keep_alive")
    models: dict[str, ModelSpec] = {}
    model_tables: dict[str, dict] = {}
    for rank, (name, raw) in enumerate(table["models"].items()):
        fields = {k: v for k, v in raw.items() if k not in _MODEL_OPTIONAL}
        spec = parse_fields({**_MODEL_DEFAULTS, **fields}, _MODEL, f"models.{name}.")
        spec["ssd_servers"] = _placement(name, spec, rank, server_count)
        spec["ssd_copies"] = 0  # resolved into the explicit list
        _check_model(name, spec, servers)
        model_tables[name] = spec
        fields = {k: v for k, v in spec.items() if k != "ssd_copies"}
        if "engine" in raw:
            fields["engine"] = spec["engine"] = engine_of(name, raw["engine"], engines)
        if "compute_bytes" in raw:
            fields["compute_bytes"] = spec["compute_bytes"] = _compute_bytes(name, raw, spec)
        if "min_instances" in raw:
            floor = parse_fields(
                {"min_instances": raw["min_instances"]}, _FLOOR, f"models.{name}."
            )["min_instances"]
            fields["min_instances"] = spec["min_instances"] = floor
        models[name] = ModelSpec(
            name=name, **{**fields, "ssd_servers": tuple(fields["ssd_servers"])}
        )
    _check_ssd_space(models, servers)
    _check_floors(models, servers)
    resolved = {
        **top,
        "keep_alive": top["keep_alive"].text,
        **({_PEER: True} if peer else {}),
        **({_DOWNLOAD: True} if download else {}),
        **({_BESIDE: True} if beside else {}),
        "workload": workload,
        "migration": migration,
        "servers": groups,
        "models": model_tables,
    }
    if "engines" in table:
        resolved["engines"] = table["engines"]
    if "sleep" in table:
        resolved["sleep"] = table["sleep"]
    if "profile" in table:  # provenance of the numbers a profile set: kept as it is
        resolved["profile"] = _provenance(table["profile"])
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
        copying=copying,
        sleep=sleep or None,
        remote_download=download,
        load_beside_startup=beside,
    )


def _check_floors(models: dict[str, ModelSpec], servers: tuple[ServerGroup, ...]) -> None:
    """Refuse floors of instances (`min_instances`) whose GPUs the cluster does not have
    (a floor that fits only in GPUs but not in servers is refused when the run starts)."""
    gpus = sum(group.count * group.gpus for group in servers)
    asked = 0
    for name, model in models.items():  # named: the model whose floor tips it over
        asked += model.min_instances * model.gpus
        if asked > gpus:
            raise InputError(
                f"models.{name}.min_instances: the floors ask for {asked} GPUs, "
                f"the cluster has {gpus}"
            )


# --- peer loading (docs/peer-loading.md): off unless `peer_loading = true` ---

_PEER = "peer_loading"
# The links of a server group's GPUs to other GPUs, and their defaults (sources in the docs):
# an A40 NVLink bridge (112.5 GB/s both ways), a 100 GbE RDMA NIC.
_PEER_LINKS = {"gpu_link": "56.25GB/s", "compute_network": "100Gb/s"}


def _switch(table: dict, key: str) -> bool:
    """A top-level switch, off unless given true."""
    try:
        return flag(table.get(key, False))
    except ValueError as err:
        raise InputError(f"{key}: {err}") from None


def _peer_links(group: dict, where: str, on: bool) -> dict[str, float]:
    """A group's peer links: given or defaulted when peer loading is on, refused when off."""
    given = [key for key in _PEER_LINKS if key in group]
    if not on:
        if given:
            raise InputError(f"{where}{given[0]}: only with peer_loading = true")
        return {}
    raw = {key: group.get(key, default) for key, default in _PEER_LINKS.items()}
    return parse_fields(raw, dict.fromkeys(_PEER_LINKS, bandwidth), where)


def _compute_bytes(name: str, raw: dict, spec: dict) -> int:
    """`compute_bytes`: the bytes of the checkpoint a forward pass reads, at most its
    weights (the rest is carried, not computed with); inference speeds scale by it."""
    where = f"models.{name}.compute_bytes"
    try:
        value = size(raw["compute_bytes"])
    except ValueError as err:
        raise InputError(f"{where}: {err}") from None
    if value > spec["weights"]:
        raise InputError(f"{where}: more than the model's weights ({spec['weights']} bytes)")
    return value


# --- the storage tiers (docs/model.md): both off unless given ---

# A remote start downloads to SSD, then loads from there (`sim.model.loading`).
_DOWNLOAD = "remote_download"
# A start's load runs beside its start-up (the default one, or the profile's measured
# engine), as where a per-server checkpoint store reads it while the engine starts.
_BESIDE = "load_beside_startup"
_SWITCHES = (_PEER, _DOWNLOAD, _BESIDE)
# The aggregate bandwidth of the one disk a host's servers share (`servers_per_host`), and
# its aggregate while two or more transfers cross it, the CPU-seconds per GB its loads
# from SSD and its downloads take on the host's cores, the seconds per GB a deletion from
# its SSD holds the disk, and how much a start-up's CPU stage
# slows beside any other CPU work there.
_HOST_KEYS = {
    "host_disk": bandwidth,
    "host_disk_shared": bandwidth,
    "load_cpu_s_per_gb": ranged(0.0, bounds.CPU_S_PER_GB, positive=False),
    "download_cpu_s_per_gb": ranged(0.0, bounds.CPU_S_PER_GB, positive=False),
    "ssd_delete_s_per_gb": ranged(0.0, bounds.DELETE_S_PER_GB, positive=False),
    "startup_company_slowdown": ranged(0.0, bounds.COMPANY_SLOWDOWN, positive=False),
}


def _host_keys(group: dict, where: str) -> dict[str, float]:
    """A group's host disk, its loads' CPU and its start-ups' slowdown in company, where
    given: absent, each server's SSD reads only its own link, loads take no CPU, and a
    start-up slows only once the cores run out."""
    given = {key: group[key] for key in _HOST_KEYS if key in group}
    if "host_disk_shared" in given and "host_disk" not in given:
        raise InputError(f"{where}host_disk_shared: needs host_disk (the disk it qualifies)")
    return parse_fields(given, {key: _HOST_KEYS[key] for key in given}, where)


def _provenance(value: Any) -> dict:
    """The `[profile]` table a resolved configuration carries (the profile's path, its
    SHA-256 and the keys it set), checked: it is written back as it is read."""
    table = sub_table(value, "profile")
    kinds = {"path": str, "sha256": str, "applied": list}
    for key, item in table.items():
        if key not in kinds:
            raise InputError(f"profile.{key}: unknown key (expected path, sha256, applied)")
        if not isinstance(item, kinds[key]) or (
            key == "applied" and not all(isinstance(k, str) for k in item)
        ):
            wanted = "a list of strings" if key == "applied" else "a string"
            raise InputError(f"profile.{key}: expected {wanted}, got {item!r}")
    return table


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


def read_config(
    path: str | Path | None = None,
    profile: str | Path | None = None,
    *,
    models: int | None = None,
) -> ClusterConfig:
    """The configuration in `path` laid over the defaults (the defaults alone when None),
    with the hardware numbers of the `profile` laid over that (`sim.config.profile`),
    built once; errors name the file (and the profile, when one was laid over it).
    `models` (the command line's `--models`) replaces the catalog by a generated one of
    that many models, drawn as the file's `[catalog]` says, if it has one."""
    table = default_cluster()
    where = ""
    here = None if path is None else Path(path).parent
    try:
        if path is not None:
            where = str(path)
            table = _merge(table, read_toml(Path(path)))
        if models is not None:
            table.pop("models", None)
            table["catalog"] = {**table.get("catalog", {}), "models": models}
        if "catalog" in table:
            table["models"] = _generated(table.pop("catalog"), table["servers"], here)
    except InputError as err:
        raise InputError(f"{where}: {err}" if where else str(err)) from None
    if profile is not None:
        derived, digest = read_profile(Path(profile))
        where = f"{where} with the profile {profile}" if where else f"{profile}"
        try:
            beside = _switch(table, _BESIDE)
            applied = apply_profile(table, derived, _sizes(table["models"]), beside)
        except InputError as err:
            raise InputError(f"{where}: {err}") from None
        table["profile"] = {"path": str(profile), "sha256": digest, "applied": applied}
    try:
        return _build(table)
    except InputError as err:
        raise InputError(f"{where}: {err}" if where else str(err)) from None


def _generated(catalog: dict, groups: list[dict], here: Path | None) -> dict[str, dict]:
    """The `[models]` tables of a generated catalog (`sim.config.catalog`), for the
    server groups as written (their GPUs, memory, SSDs and count parsed here)."""
    keys = ("count", "gpus", "gpu_memory", "ssd")
    servers = [
        parse_fields(
            {k: group.get(k) for k in keys}, {k: _SERVER[k] for k in keys}, f"servers[{i}]."
        )
        for i, group in enumerate(groups)
    ]
    return generate(catalog, servers, here)


def _sizes(models: dict) -> dict[str, tuple[int, int, bool]]:
    """Each model's bytes a forward pass reads (`compute_bytes`, else its weights), GPUs
    and whether it names an engine, for a profile to scale by: parsed by the parsers
    `_build` uses, so a bad value is the same error."""
    sizes = {}
    for name, raw in models.items():
        raw = sub_table(raw, f"models.{name}")
        weights, gpus = parse_fields(
            {key: raw.get(key) for key in ("weights", "gpus")},
            {key: _MODEL[key] for key in ("weights", "gpus")},
            f"models.{name}.",
        ).values()
        if "compute_bytes" in raw:
            weights = _compute_bytes(name, raw, {"weights": weights})
        sizes[name] = (weights, gpus, "engine" in raw)
    return sizes
