"""The hardware profile: measured numbers that replace the cluster's guesses.

`python -m calibration.measure` writes it on a real machine; anyone can write one by hand
for hardware they do not own. JSON, versioned (`SCHEMA_VERSION`; version 1, without the
start-up's CPU figures, still loads):

    {
      "version": 2,
      "machine": {"description": "what was measured, and how"},
      "measurements": {NAME: {"n", "median", "min", "max", "unit", "page_cache_possible"}},
      "derived": {
        "ssd_read_bytes_per_s":     SSD -> device through the real loader, cold
        "dram_to_gpu_bytes_per_s":  host memory -> one device (the `pcie` link): the real
                                    loader on a checkpoint held in host memory
        "network_bytes_per_s":      optional: the remote store's link per server
        "instance_startup_s":       a fresh process importing torch and creating its context
        "startup_cpu_s":            version 2: the CPU-seconds of that start-up (at most it)
        "host_cores":               version 2: the effective cores start-ups at once
                                    share, fitted to how they stretch
        "warmup_s":                 version 2, optional: after the load, the model's build
                                    and its first pass's one-time costs
        "host_disk_bytes_per_s":    version 2, optional: the host's one disk, all its
                                    concurrent O_DIRECT readers together
        "host_disk_shared_bytes_per_s": version 2, optional: the same disk's aggregate
                                    while two or more transfers cross it, where it
                                    differs (calibration.validate measures it)
        "load_cpu_s_per_byte":      version 2, optional: the CPU-seconds a cold load from
                                    SSD takes per byte (page faults, copies, checksums)
        "download_cpu_s_per_byte":  version 2, optional: the same for a download from the
                                    remote store
        "ssd_delete_s_per_byte":    version 2, optional: the seconds per byte deleting a
                                    checkpoint from the SSD holds the disk
        "startup_company_slowdown": version 2, optional: how much slower a start-up runs
                                    beside a download, below the cores' saturation
        "reference_model_bytes":    weights per GPU of the model the rates were measured on
        "decode_step_s":            one decode step of that model at batch 1
        "decode_step_per_request_s": what each extra request in the batch adds to a step
        "recompute_tokens_per_s":   prefill (= KV recompute) tokens/s of that model
        "prefill_fixed_s":          version 2, optional: a prefill pass's fixed part (the
                                    rate is then what it takes beyond it)
        "migration_fixed_s":        b of the migration round cost a * tokens + b
        "migration_per_token_s":    a, as fitted (kept for the record: the simulator
                                    derives a from the network and the recompute rate)
      }
    }

Applying it (`apply`): every server group takes the bandwidths; every model takes
inference speeds scaled from the reference model by its weights per GPU (decoding reads
every weight once a step, so its step time grows with them; a prefill's work grows with
the parameters, so its rate falls with them, and its fixed part, where the profile has
one, grows with them as a step does); the migration rounds take the fixed cost.
A version-2 profile also sets every group's `host_cores` (and `host_disk`, where it has
`host_disk_bytes_per_s`: the disk a host's servers share; `host_disk_shared`, where it
has `host_disk_shared_bytes_per_s`; `load_cpu_s_per_gb` and
`download_cpu_s_per_gb`, where it has their CPU per byte; `ssd_delete_s_per_gb`, where it
has `ssd_delete_s_per_byte`; `startup_company_slowdown`,
where it has it) and creates the engine
`measured` (docs/startup-stages.md): the start-up's fixed part (its wall time less its
CPU-seconds), then its CPU-bound part, then the load (or, where the cluster sets
`load_beside_startup`, the three overlapped, the load into host memory, then the
engine's copy onto its GPUs), then the warm-up where the profile has one (a fixed
stage); every model without an engine of its own takes it.
`measurements` are the raw figures behind `derived`, kept for provenance.
"""

import hashlib
from pathlib import Path
from typing import Any

from thaw_kernel import bounds
from thaw_kernel.errors import InputError
from thaw_kernel.user_files import BOM, parse_json, read_bytes

SCHEMA_VERSION = 2
VERSIONS = (1, 2)  # what still loads
MEASURED_ENGINE = "measured"

_DERIVED_REQUIRED = (
    "ssd_read_bytes_per_s",
    "dram_to_gpu_bytes_per_s",
    "instance_startup_s",
    "reference_model_bytes",
    "decode_step_s",
    "decode_step_per_request_s",
    "recompute_tokens_per_s",
    "migration_fixed_s",
    "migration_per_token_s",
)
_DERIVED_V2 = ("startup_cpu_s", "host_cores")
_DERIVED_OPTIONAL = ("network_bytes_per_s",)
_DERIVED_V2_OPTIONAL = (
    "warmup_s",
    "host_disk_bytes_per_s",
    "host_disk_shared_bytes_per_s",
    "load_cpu_s_per_byte",
    "download_cpu_s_per_byte",
    "ssd_delete_s_per_byte",
    "startup_company_slowdown",
    "prefill_fixed_s",
)
_MAY_BE_ZERO = (
    "decode_step_per_request_s",
    "migration_fixed_s",
    "instance_startup_s",
    "startup_cpu_s",
    "warmup_s",
    "load_cpu_s_per_byte",
    "download_cpu_s_per_byte",
    "ssd_delete_s_per_byte",
    "startup_company_slowdown",
    "prefill_fixed_s",
)
_MEASUREMENT = ("n", "median", "min", "max", "unit", "page_cache_possible")


def _number(value: Any, key: str, *, zero_ok: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"{key}: expected a number, got {value!r}")
    if value != value or value in (float("inf"), float("-inf")):
        raise InputError(f"{key}: expected a finite number, got {value!r}")
    if value < 0 or (value == 0 and not zero_ok):
        raise InputError(f"{key}: expected a {'non-negative' if zero_ok else 'positive'} number")
    return float(value)


def _table(value: Any, key: str) -> dict:
    if not isinstance(value, dict):
        raise InputError(f"{key}: expected an object, got {type(value).__name__}")
    return value


def _check_measurement(name: str, raw: Any) -> None:
    fields = _table(raw, f"measurements.{name}")
    for key in fields:
        if key not in _MEASUREMENT:
            raise InputError(f"measurements.{name}.{key}: unknown key")
    for key in _MEASUREMENT:
        if key not in fields:
            raise InputError(f"measurements.{name}.{key}: missing")
    n = fields["n"]
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InputError(f"measurements.{name}.n: expected a positive integer, got {n!r}")
    if not isinstance(fields["unit"], str):
        raise InputError(f"measurements.{name}.unit: expected a string")
    if not isinstance(fields["page_cache_possible"], bool):
        raise InputError(f"measurements.{name}.page_cache_possible: expected true or false")
    low, mid, high = (
        _number(fields[k], f"measurements.{name}.{k}", zero_ok=True)
        for k in ("min", "median", "max")
    )
    if not low <= mid <= high:
        raise InputError(f"measurements.{name}: expected min <= median <= max")


def parse(document: Any) -> dict[str, float]:
    """The derived parameters of a profile document, after checking every field."""
    doc = _table(document, "profile")
    version = doc.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version not in VERSIONS:
        raise InputError(
            f"version: expected {' or '.join(map(str, VERSIONS))}, got {doc.get('version')!r} "
            "(a profile from another version of thaw)"
        )
    for key in doc:
        if key not in ("version", "machine", "measurements", "derived"):
            raise InputError(
                f"{key}: unknown key (expected version, machine, measurements, derived)"
            )
    machine = _table(doc.get("machine"), "machine")
    if not isinstance(machine.get("description"), str):
        raise InputError("machine.description: expected a string saying what was measured")
    for name, raw in _table(doc.get("measurements", {}), "measurements").items():
        _check_measurement(name, raw)
    raw = _table(doc.get("derived"), "derived")
    required = _DERIVED_REQUIRED + (_DERIVED_V2 if version >= 2 else ())
    optional = _DERIVED_OPTIONAL + (_DERIVED_V2_OPTIONAL if version >= 2 else ())
    for key in raw:
        if key not in required + optional:
            raise InputError(f"derived.{key}: unknown key (in a version {version} profile)")
    derived = {}
    for key in required + optional:
        if key in raw:
            derived[key] = _number(raw[key], f"derived.{key}", zero_ok=key in _MAY_BE_ZERO)
        elif key in required:
            raise InputError(f"derived.{key}: missing")
    if version >= 2:
        cores = derived["host_cores"]
        if not bounds.HOST_CORES_MIN <= cores <= bounds.HOST_CORES:
            raise InputError(
                f"derived.host_cores: expected {bounds.HOST_CORES_MIN:g} to {bounds.HOST_CORES} "
                f"(thaw_kernel/bounds.py), got {cores!r}"
            )
        if derived["startup_cpu_s"] > derived["instance_startup_s"]:
            raise InputError("derived.startup_cpu_s: more than instance_startup_s")
        if "host_disk_shared_bytes_per_s" in derived and "host_disk_bytes_per_s" not in derived:
            raise InputError("derived.host_disk_shared_bytes_per_s: needs host_disk_bytes_per_s")
        if derived.get("startup_company_slowdown", 0.0) > bounds.COMPANY_SLOWDOWN:
            raise InputError(
                f"derived.startup_company_slowdown: expected at most {bounds.COMPANY_SLOWDOWN:g} "
                f"(thaw_kernel/bounds.py), got {derived['startup_company_slowdown']!r}"
            )
    return derived


def read_profile(path: Path) -> tuple[dict[str, float], str]:
    """The derived parameters in `path` and the file's SHA-256; errors name the file."""
    data = read_bytes(path)
    try:
        document = parse_json(data.decode("utf-8").removeprefix(BOM))
    except (ValueError, UnicodeDecodeError) as err:
        raise InputError(f"{path}: invalid JSON: {err}") from None
    try:
        return parse(document), hashlib.sha256(data).hexdigest()
    except InputError as err:
        raise InputError(f"{path}: {err}") from None


def apply(
    table: dict,
    derived: dict[str, float],
    models: dict[str, tuple[int, int, bool]],
    load_beside_startup: bool = False,
) -> list[str]:
    """Lay the profile over `table`, the merged cluster table, whose `models` have the
    bytes a forward pass reads, GPUs and own-engine flag given (checked); returns the keys
    it set. `load_beside_startup`: the cluster's switch, which the measured engine obeys."""
    applied = ["instance_startup_s"]
    table["instance_startup_s"] = derived["instance_startup_s"]
    links = {"ssd_read": "ssd_read_bytes_per_s", "pcie": "dram_to_gpu_bytes_per_s"}
    if "network_bytes_per_s" in derived:
        links["network"] = "network_bytes_per_s"
    for i, group in enumerate(table["servers"]):
        for key, source in links.items():
            group[key] = derived[source]
            applied.append(f"servers[{i}].{key}")
    for name, (weights, gpus, _) in models.items():
        scale = weights / gpus / derived["reference_model_bytes"]
        model = table["models"][name]
        model["decode_step_s"] = derived["decode_step_s"] * scale
        model["decode_step_per_request_s"] = derived["decode_step_per_request_s"] * scale
        model["prefill_tokens_per_s"] = derived["recompute_tokens_per_s"] / scale
        applied += [
            f"models.{name}.{key}"
            for key in ("decode_step_s", "decode_step_per_request_s", "prefill_tokens_per_s")
        ]
        if "prefill_fixed_s" in derived:
            model["prefill_fixed_s"] = derived["prefill_fixed_s"] * scale
            applied.append(f"models.{name}.prefill_fixed_s")
    table["migration"]["round_overhead_s"] = derived["migration_fixed_s"]
    applied.append("migration.round_overhead_s")
    if "host_cores" in derived:
        applied += _apply_startup(table, derived, models, load_beside_startup)
    return applied


def _apply_startup(
    table: dict,
    derived: dict[str, float],
    models: dict[str, tuple[int, int, bool]],
    beside: bool,
) -> list[str]:
    """Version 2: the groups' host cores (and disk), and the measured start-up as an
    engine, its load after the start-up or, `beside`, overlapping it."""
    applied = []
    for i, group in enumerate(table["servers"]):
        group["host_cores"] = derived["host_cores"]
        applied.append(f"servers[{i}].host_cores")
        for field in ("host_disk", "host_disk_shared"):
            if f"{field}_bytes_per_s" in derived:
                group[field] = derived[f"{field}_bytes_per_s"]
                applied.append(f"servers[{i}].{field}")
        for kind in ("load", "download"):
            if f"{kind}_cpu_s_per_byte" in derived:
                group[f"{kind}_cpu_s_per_gb"] = derived[f"{kind}_cpu_s_per_byte"] * 1e9
                applied.append(f"servers[{i}].{kind}_cpu_s_per_gb")
        if "ssd_delete_s_per_byte" in derived:
            group["ssd_delete_s_per_gb"] = derived["ssd_delete_s_per_byte"] * 1e9
            applied.append(f"servers[{i}].ssd_delete_s_per_gb")
        if "startup_company_slowdown" in derived:
            group["startup_company_slowdown"] = derived["startup_company_slowdown"]
            applied.append(f"servers[{i}].startup_company_slowdown")
    cpu = derived["startup_cpu_s"]
    startup: list[dict[str, Any]] = [
        {"name": "startup", "seconds": derived["instance_startup_s"] - cpu}
    ]
    if cpu > 0:
        startup.append({"name": "startup-cpu", "cpu_seconds": cpu})
    load = {"name": "load"}
    stages: list[Any] = [[*startup, load], {"name": "copy"}] if beside else [*startup, load]
    if derived.get("warmup_s", 0.0) > 0:
        stages.append({"name": "warmup", "seconds": derived["warmup_s"]})
    table["engines"] = {**table.get("engines", {}), MEASURED_ENGINE: {"stages": stages}}
    applied.append(f"engines.{MEASURED_ENGINE}")
    for name, (_, _, has_engine) in models.items():
        if not has_engine:
            table["models"][name]["engine"] = MEASURED_ENGINE
            applied.append(f"models.{name}.engine")
    return applied
