"""The model catalog and popularity `python -m traces` uses when a trace names no model.

`--models a,b,c` lists the models; `--cluster FILE.toml` takes the keys of its `[models]`
table (in file order: the first is the most popular) and its `workload.zipf_exponent`;
otherwise the simulator's defaults (`sim/defaults/cluster.toml`, read as data through
`thaw_kernel.toml_file`: traces imports no simulator code). So a converted trace is the
workload `python -m sim run` would build from the same file, cluster and seed.
"""

from collections.abc import Iterator
from pathlib import Path

from thaw_kernel.toml_file import DEFAULT_CLUSTER, default_cluster, read_toml
from traces.errors import TraceError


def _sources(cluster: Path | None) -> Iterator[tuple[dict, str]]:
    """The cluster file's table, then the defaults'."""
    if cluster is not None:
        yield read_toml(cluster), str(cluster)
    yield default_cluster(), DEFAULT_CLUSTER


def default_models() -> list[str]:
    return catalog(None, None)


def catalog(models: str | None, cluster: Path | None) -> list[str]:
    if models is not None:
        names = [name.strip() for name in models.split(",")]
        if not all(names):
            raise TraceError(f"--models: expected NAME[,NAME...], got {models!r}")
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise TraceError(
                f"--models: {twice[0]!r} is named twice (a catalog's order is its popularity)"
            )
        return names
    for table, where in _sources(cluster):
        found = table.get("models")
        if found is not None:
            if not isinstance(found, dict) or not found:
                raise TraceError(f"{where}: models: expected a non-empty table of models")
            return list(found)
    raise TraceError(f"{DEFAULT_CLUSTER}: has no models")


def zipf_exponent(zipf: float | None, cluster: Path | None) -> float:
    """`--zipf`, else the first `workload.zipf_exponent` of the cluster file and defaults."""
    if zipf is not None:
        return zipf
    for table, where in _sources(cluster):
        workload = table.get("workload", {})
        if isinstance(workload, dict) and "zipf_exponent" in workload:
            value = workload["zipf_exponent"]
            if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
                raise TraceError(f"{where}: workload.zipf_exponent: expected a number >= 0")
            return float(value)
    return 1.0
