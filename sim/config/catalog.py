"""A generated catalog: the `[catalog]` table of a cluster file, a model hub of up to
`bounds.MODELS` models, in place of a hand-written `[models]` list.

    [catalog]
    models = 10000          # how many, named m0000 .. m9999, most popular first
    seed = 0                # fixes the sizes' draws
    parameters = [7e9, 13e9, 70e9]  # the size classes, in parameters
    shares = [0.6, 0.3, 0.1]        # each class's share of the models (default: equal)
    # or, instead of models/seed/parameters/shares, a file listing the models:
    # file = "models.csv"   # a header `name,parameters`, a row per model, most popular first

The other keys and their defaults: `bytes_per_parameter = 2` (fp16), `memory_bandwidth =
"696GB/s"` and `tflops = 150` (one GPU's memory bandwidth and dense fp16 tensor peak:
the NVIDIA A40 datasheet, as the bundled catalog assumes), `max_batch = 16`,
`ssd_copies = 2`. Without `parameters`, the classes are the bundled catalog's seven
(6.7, 7, 13, 13, 30, 66 and 70 billion parameters, from their model cards), equally
likely: a choice, not a measured hub.

A model's other figures follow from its size by the rules the bundled catalog was
written by (sim/defaults/cluster.toml): its GPUs are the smallest power of two (tensor
parallelism splits a model over a power of two) that some server group can give and
whose memory holds the weights; `decode_step_s` is the weights per GPU over 60% of the
memory bandwidth (a decode step reads every weight), `prefill_tokens_per_s` is the
GPUs' 40% of peak over 2 FLOPs per parameter and token, and each extra request in a
batch adds 3% of the step. Popularity is the workload's Zipf over the catalog's order,
as for a written catalog; sizes are drawn independently of it.

Placement: the models take their `ssd_copies` copies round-robin by rank, as a written
catalog's do, most popular first, while the SSDs have room: a model whose copies do not
all fit is left to the remote store (a hub's long tail is), and a later, smaller one may
still fit.
"""

import csv
import math
from pathlib import Path
from typing import Any

import numpy as np

from sim.config.fields import bandwidth, integers, parse_fields, ranged, sub_table
from thaw_kernel import bounds
from thaw_kernel.errors import InputError

_CLASSES = (6.7e9, 7e9, 13e9, 13e9, 30e9, 66e9, 70e9)  # the bundled catalog's models
_DECODE_EFFICIENCY = 0.6  # of the memory bandwidth a decode step reaches
_PREFILL_EFFICIENCY = 0.4  # of the tensor peak a prefill reaches
_PER_REQUEST = 0.03  # of the decode step, each extra request in a batch
_DEFAULTS: dict[str, Any] = {
    "bytes_per_parameter": 2,
    "memory_bandwidth": "696GB/s",
    "tflops": 150,
    "max_batch": 16,
    "ssd_copies": 2,
}
_COMMON = {
    "bytes_per_parameter": ranged(0.01, 64),
    "memory_bandwidth": bandwidth,
    "tflops": ranged(1e-6, 1e9),
    "max_batch": integers(bounds.MAX_BATCH),
    "ssd_copies": integers(bounds.SERVERS, minimum=0),
}
_PARAMETERS = ranged(1, 1e15)
_DRAWN = {
    "models": integers(bounds.MODELS),
    "seed": integers(2**63 - 1, minimum=0),
    "parameters": lambda v: _numbers(v, _PARAMETERS),
    "shares": lambda v: _numbers(v, ranged(0, 1e300, positive=False)),
}


def generate(table: dict, servers: list[dict], here: Path | None) -> dict[str, dict]:
    """The `[models]` tables of the catalog `table` says, for `servers` (the cluster's
    parsed groups: gpus, gpu_memory, ssd, count); a `file` is read relative to `here`."""
    table = sub_table(table, "catalog")
    given = {key: value for key, value in table.items() if key in _COMMON}
    common = parse_fields({**_DEFAULTS, **given}, _COMMON, "catalog.")
    rest = {key: value for key, value in table.items() if key not in _COMMON}
    if "file" in rest:
        if len(rest) > 1:
            other = next(key for key in rest if key != "file")
            raise InputError(f"catalog.{other}: not with catalog.file (the file lists the models)")
        names, parameters = _listed(rest["file"], here)
    else:
        names, parameters = _drawn(rest)
    return _models(names, parameters, common, servers)


def _drawn(table: dict) -> tuple[list[str], np.ndarray]:
    """Names and parameter counts drawn as `table` (models, seed, parameters, shares) says."""
    table = {"seed": 0, "parameters": list(_CLASSES), **table}
    if "models" not in table:
        raise InputError("catalog.models: missing (or give catalog.file)")
    classes = table["parameters"]
    table.setdefault("shares", [1.0] * (len(classes) if isinstance(classes, list) else 1))
    drawn = parse_fields(table, _DRAWN, "catalog.")
    classes, shares = drawn["parameters"], drawn["shares"]
    if len(shares) != len(classes):
        raise InputError(
            f"catalog.shares: {len(shares)} shares for {len(classes)} parameter classes"
        )
    if not sum(shares) > 0:
        raise InputError("catalog.shares: expected at least one positive share")
    count = drawn["models"]
    rng = np.random.default_rng(drawn["seed"])
    picks = rng.choice(len(classes), size=count, p=np.asarray(shares) / sum(shares))
    width = len(str(count - 1))
    return [f"m{rank:0{width}d}" for rank in range(count)], np.asarray(classes)[picks]


def _listed(value: Any, here: Path | None) -> tuple[list[str], np.ndarray]:
    """Names and parameter counts from the CSV file `value` (relative to `here`)."""
    if not isinstance(value, str) or not value:
        raise InputError(f"catalog.file: expected a path, got {value!r}")
    path = Path(value) if here is None else here / value
    try:
        with path.open(newline="") as handle:
            rows = list(csv.reader(handle))
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"catalog.file: cannot read {path}: {err}") from None
    if not rows or [cell.strip() for cell in rows[0]] != ["name", "parameters"]:
        raise InputError(f"{path}:1: expected the header name,parameters")
    names, parameters, seen = [], [], set()
    for line, row in enumerate(rows[1:], start=2):
        if len(row) != 2 or not row[0].strip():
            raise InputError(f"{path}:{line}: expected a name and a parameter count")
        name = row[0].strip()
        if name in seen:
            raise InputError(f"{path}:{line}: model {name!r} listed twice")
        try:
            parameters.append(_PARAMETERS(float(row[1])))
        except ValueError as err:
            raise InputError(f"{path}:{line}: parameters: {err}") from None
        names.append(name)
        seen.add(name)
    if not names:
        raise InputError(f"{path}: lists no models")
    if len(names) > bounds.MODELS:
        raise InputError(f"{path}: more than {bounds.MODELS} models (thaw_kernel/bounds.py)")
    return names, np.asarray(parameters)


def _models(
    names: list[str], parameters: np.ndarray, common: dict, servers: list[dict]
) -> dict[str, dict]:
    """Each model's table, its figures derived from its size (the module's docstring)."""
    free = [group["ssd"] for group in servers for _ in range(group["count"])]
    count, copies = len(free), min(common["ssd_copies"], len(free))
    flops = common["tflops"] * 1e12 * _PREFILL_EFFICIENCY
    models = {}
    for rank, (name, params) in enumerate(zip(names, parameters.tolist(), strict=True)):
        weights = math.ceil(params * common["bytes_per_parameter"])
        gpus = _gpus(name, weights, servers)
        step = weights / gpus / (common["memory_bandwidth"] * _DECODE_EFFICIENCY)
        targets = sorted({(rank * copies + j) % count for j in range(copies)})
        if all(free[k] >= weights for k in targets):
            for k in targets:
                free[k] -= weights
        else:
            targets = []
        models[name] = {
            "weights": weights,
            "gpus": gpus,
            "prefill_tokens_per_s": gpus * flops / (2 * params),
            "decode_step_s": step,
            "decode_step_per_request_s": _PER_REQUEST * step,
            "max_batch": common["max_batch"],
            "ssd_servers": targets,
        }
    return models


def _gpus(name: str, weights: int, servers: list[dict]) -> int:
    """The smallest power of two GPUs some server group gives whose memory holds `weights`."""
    fits = []
    for group in servers:
        gpus = 1 << math.ceil(math.log2(max(1.0, weights / group["gpu_memory"])))
        if gpus <= group["gpus"]:
            fits.append(gpus)
    if not fits:
        raise InputError(f"catalog: model {name} ({weights} bytes) fits on no server group's GPUs")
    return min(fits)


def _numbers(value: Any, parse) -> list[float]:
    if not isinstance(value, list) or not value:
        raise ValueError(f"expected a non-empty list of numbers, got {value!r}")
    return [parse(item) for item in value]
