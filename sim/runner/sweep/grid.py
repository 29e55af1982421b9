"""A sweep's grid: policies x traces x rate scales x clusters x keep-alives x seeds, from a
TOML file and command-line overrides, validated before any run starts.

A sweep file (every key optional; paths relative to the file; `"default"` names the
bundled trace or the default cluster):

    policies = ["random", "locality"]
    seeds = 3                     # seeds 0..2; or a list: [0, 7]
    rate_scales = [1.0, 2.0]      # arrival rate multipliers (time compression)
    traces = ["default"]
    clusters = ["default", "../configs/contended.toml"]
    backend = "local"             # or "ray"
    jobs = 2
    out = "sweeps/mine"
    ray_address = "auto"          # an existing Ray cluster; omit to start a local one
    keep_alives = ["fixed:60", "histogram:bin_s=1,min_samples=1"]  # keep-alive policies;
                                  # omit: each cluster's own
    keep_alive = "histogram"      # the same as keep_alives = ["histogram"]

Run directories name the keep-alive only when the sweep varies it (two or more), so that
a sweep under one keep-alive keeps the run names it had before keep-alive was an axis.
"""

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import traces
from policies import get_policy
from sim.keep_alive import parse_keep_alive
from sim.spec import KeepAliveSpec
from thaw_kernel import bounds
from thaw_kernel.errors import InputError
from thaw_kernel.toml_file import read_toml

BACKENDS = ("local", "ray")
DEFAULT = "default"


@dataclass(frozen=True)
class RunPoint:
    """One run of the grid. Labels name the trace and cluster in tables and directories."""

    policy: str
    trace: str
    trace_path: str
    rate_scale: float
    cluster: str
    cluster_path: str | None  # None: the default cluster
    seed: int
    keep_alive: KeepAliveSpec | None = None  # None: the cluster's own
    keep_alive_varies: bool = False  # the sweep varies it: the name and record hold it

    @property
    def name(self) -> str:
        """The run directory's name: every coordinate, readable, and unique by
        construction: the fields after the policy hold no "-" (it is escaped as "%2D"),
        so the name splits back into its coordinates from the right."""
        fields = [_escape(self.trace), _escape(f"x{self.rate_scale:g}"), _escape(self.cluster)]
        if self.keep_alive_varies:
            fields.append(escape_spec(str(self.keep_alive)))
        return "-".join((self.policy, *fields, f"seed{self.seed}"))

    def record(self) -> dict[str, Any]:
        """What a run's summary.json keeps of its place in the sweep."""
        record = {
            "policy": self.policy,
            "trace": self.trace,
            "trace_path": self.trace_path,
            "rate_scale": self.rate_scale,
            "cluster": self.cluster,
            "cluster_path": self.cluster_path,
            "seed": self.seed,
        }
        if self.keep_alive_varies:
            record["keep_alive"] = str(self.keep_alive)
        return record


@dataclass(frozen=True)
class Sweep:
    policies: tuple[str, ...]
    traces: tuple[Path, ...]
    rate_scales: tuple[float, ...]
    clusters: tuple[Path | None, ...]
    seeds: tuple[int, ...]
    backend: str
    jobs: int | None  # None: one per CPU
    out: Path
    ray_address: str | None
    keep_alives: tuple[KeepAliveSpec | None, ...] = (None,)  # (None,): each cluster's own

    def points(self) -> list[RunPoint]:
        """Every run, seeds innermost so that early results cover whole settings."""
        trace_labels, cluster_labels = labels(self.traces), labels(self.clusters)
        varies = len(self.keep_alives) > 1
        return [
            RunPoint(
                policy,
                trace_labels[t],
                str(t),
                scale,
                cluster_labels[c],
                None if c is None else str(c),
                seed,
                keep_alive,
                varies,
            )
            for c, t, scale, keep_alive, policy, seed in itertools.product(
                self.clusters,
                self.traces,
                self.rate_scales,
                self.keep_alives,
                self.policies,
                self.seeds,
            )
        ]

    def to_table(self) -> dict[str, Any]:
        """The resolved sweep as a sweep file (absolute paths): it reproduces the grid."""
        table: dict[str, Any] = {
            "policies": list(self.policies),
            "seeds": list(self.seeds),
            "rate_scales": list(self.rate_scales),
            "traces": [str(t) for t in self.traces],
            "clusters": [DEFAULT if c is None else str(c) for c in self.clusters],
            "backend": self.backend,
            "out": str(self.out.resolve()),
        }
        if self.jobs is not None:
            table["jobs"] = self.jobs
        if self.ray_address is not None:
            table["ray_address"] = self.ray_address
        if len(self.keep_alives) > 1:
            table["keep_alives"] = [str(spec) for spec in self.keep_alives]
        elif self.keep_alives[0] is not None:
            table["keep_alive"] = str(self.keep_alives[0])
        return table


def _escape(field: str) -> str:
    return field.replace("%", "%25").replace("-", "%2D")


def escape_spec(spec: str) -> str:
    """A keep-alive spec as a run name's field: `%` and every character but letters,
    digits and `_.=,+` as `%XX` (`:` is not allowed in Windows file names), so that
    distinct specs get distinct, filesystem-safe fields holding no "-"."""
    return "".join(c if c.isascii() and (c.isalnum() or c in "_.=,+") else
                   "".join(f"%{b:02X}" for b in c.encode()) for c in spec)  # fmt: skip


def labels(paths: tuple[Path | None, ...]) -> dict[Path | None, str]:
    """Each file's name in tables and run directories: its stem, or "default"."""
    return {p: DEFAULT if p is None else p.stem for p in paths}


def _list(value: Any, kind: type | tuple[type, ...]) -> list:
    if not isinstance(value, list) or not value:
        raise ValueError(f"expected a non-empty list, got {value!r}")
    for item in value:
        if isinstance(item, bool) or not isinstance(item, kind):
            raise ValueError(f"unexpected entry {item!r}")
    if len(set(value)) != len(value):
        raise ValueError(f"repeated entries in {value!r}")
    return value


def _seeds(value: Any, base: Path) -> tuple[int, ...]:
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 1:
            raise ValueError(f"expected a count >= 1, got {value}")
        if value > bounds.SEEDS:
            raise ValueError(f"expected at most {bounds.SEEDS} seeds (thaw_kernel/bounds.py)")
        return tuple(range(value))
    seeds = _list(value, int)
    if not 0 <= min(seeds) <= max(seeds) <= bounds.SEED:
        raise ValueError(
            f"expected seeds from 0 to {bounds.SEED} (thaw_kernel/bounds.py), got {seeds!r}"
        )
    return tuple(seeds)


def _rate_scales(value: Any, base: Path) -> tuple[float, ...]:
    scales = tuple(float(x) for x in _list(value, (int, float)))
    for x in scales:
        if not (math.isfinite(x) and 1 / bounds.SCALE <= x <= bounds.SCALE):
            raise ValueError(
                f"expected numbers from {1 / bounds.SCALE:g} to {bounds.SCALE:g} "
                f"(thaw_kernel/bounds.py), got {x!r}"
            )
    if len({f"{x:g}" for x in scales}) < len(scales):  # run directories name them so
        raise ValueError(f"scales too close to tell apart in 6 digits: {list(scales)}")
    return scales


def _policies(value: Any, base: Path) -> tuple[str, ...]:
    for name in _list(value, str):
        try:
            get_policy(name)
        except KeyError as err:
            raise ValueError(err.args[0]) from None
    return tuple(value)


def _files(default: Path | None) -> Callable[[Any, Path], tuple[Path | None, ...]]:
    def parse(value: Any, base: Path) -> tuple[Path | None, ...]:
        found = []
        for name in _list(value, str):
            path = default if name == DEFAULT else base / name
            if path is not None and not path.is_file():
                raise ValueError(f"{path}: no such file")
            resolved = None if path is None else path.resolve()
            if resolved in found:
                raise ValueError(f"{name}: the same file is listed twice")
            found.append(resolved)
        named: dict[str, Path | None] = {}
        for path, label in labels(tuple(found)).items():
            key = label.casefold()  # one directory on a case-insensitive file system
            if key in named:
                raise ValueError(f"{named[key]} and {path} have the same name {label!r}")
            named[key] = path
        return tuple(found)

    return parse


def _backend(value: Any, base: Path) -> str:
    if value not in BACKENDS:
        raise ValueError(f"expected one of {', '.join(BACKENDS)}, got {value!r}")
    return value


def _jobs(value: Any, base: Path) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"expected a positive integer, got {value!r}")
    return value


def _out(value: Any, base: Path) -> Path | None:
    if value is not None and not isinstance(value, str | Path):
        raise ValueError(f"expected a path, got {value!r}")
    return None if value is None else base / value


def _address(value: Any, base: Path) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ValueError(f"expected a string, got {value!r}")
    return value


def _keep_alive(value: Any, base: Path) -> KeepAliveSpec | None:
    return None if value is None else parse_keep_alive(value)


def _keep_alives(value: Any, base: Path) -> tuple[KeepAliveSpec, ...] | None:
    if value is None:
        return None
    specs = []
    for text in _list(value, str):
        try:
            specs.append(parse_keep_alive(text))
        except ValueError as err:
            raise ValueError(f"{text}: {err}") from None
    return tuple(specs)


# key -> (default, parser of (value, directory that relative paths start from))
_KEYS: dict[str, tuple[Any, Callable[[Any, Path], Any]]] = {
    "policies": (["random", "locality", "migration", "startup-aware"], _policies),
    "seeds": (3, _seeds),
    "rate_scales": ([1.0], _rate_scales),
    "traces": ([DEFAULT], _files(traces.default_trace())),
    "clusters": ([DEFAULT], _files(None)),
    "backend": ("local", _backend),
    "jobs": (None, _jobs),
    "out": (None, _out),
    "ray_address": (None, _address),
    "keep_alive": (None, _keep_alive),
    "keep_alives": (None, _keep_alives),
}


def _read(path: Path) -> dict[str, Any]:
    table = read_toml(path)
    unknown = sorted(set(table) - set(_KEYS))
    if unknown:
        raise InputError(f"{path}: unknown key {unknown[0]!r} (known: {', '.join(_KEYS)})")
    return table


def read_sweep(path: Path | None, overrides: dict[str, Any]) -> Sweep:
    """The sweep in `path` (if any) with `overrides` (command-line values, None where not
    given) laid over it. Every value and file is checked here, before any run starts;
    errors name the file and key, or the option."""
    table = _read(path) if path is not None else {}
    pair = ("keep_alive", "keep_alives")  # one value, or the axis: one of them at most
    if all(overrides.get(key) is not None for key in pair):
        raise InputError("--keep-alive and --keep-alives: give one, not both")
    if any(overrides.get(key) is not None for key in pair):
        table = {key: value for key, value in table.items() if key not in pair}
    elif all(key in table for key in pair):
        raise InputError(f"{path}: keep_alive and keep_alives: give one, not both")
    values = {}
    for key, (default, parse) in _KEYS.items():
        if overrides.get(key) is not None:
            value, base, where = overrides[key], Path(), "--" + key.replace("_", "-")
        elif key in table:
            value, base, where = table[key], path.parent, f"{path}: {key}"
        else:
            value, base, where = default, Path(), key
        try:
            values[key] = parse(value, base)
        except ValueError as err:
            raise InputError(f"{where}: {err}") from None
    single, axis = values.pop("keep_alive"), values.pop("keep_alives")
    values["keep_alives"] = axis if axis is not None else (single,)
    if values["out"] is None:
        values["out"] = Path("sweeps") / (path.stem if path is not None else "sweep")
    sweep = Sweep(**values)
    size = math.prod(len(values[key]) for key in ("policies", "traces", "rate_scales",
                                                   "clusters", "keep_alives", "seeds"))  # fmt: skip
    if size > bounds.GRID_POINTS:
        raise InputError(f"the grid has {size} points; at most {bounds.GRID_POINTS} "
                         "(thaw_kernel/bounds.py)")  # fmt: skip
    _check_names(sweep.points())
    return sweep


def _check_names(points: list[RunPoint]) -> None:
    """Refuse two grid points sharing a run directory: one would overwrite the other."""
    seen: dict[str, RunPoint] = {}
    for point in points:
        key = point.name.casefold()
        if key in seen:
            raise InputError(
                f"the grid points {seen[key].record()} and {point.record()} would share "
                f"the run directory {point.name!r}"
            )
        seen[key] = point
