"""The model names `python -m traces` assigns when a trace names none.

`--models a,b,c` lists them; `--cluster FILE.toml` takes the keys of its `[models]` table
(in file order: the first is the most popular); otherwise the simulator's default catalog
(`sim/defaults/cluster.toml`, read as data: traces imports no simulator code), so that a
converted trace runs on the default cluster as it is.
"""

import tomllib
from importlib import resources
from pathlib import Path

from traces.errors import TraceError


def _names(text: str, where: str) -> list[str] | None:
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise TraceError(f"{where}: not valid TOML: {err}") from None
    models = table.get("models")
    if models is not None and (not isinstance(models, dict) or not models):
        raise TraceError(f"{where}: models: expected a non-empty table of models")
    return list(models) if models else None


def default_models() -> list[str]:
    text = resources.files("sim").joinpath("defaults/cluster.toml").read_text()
    return _names(text, "sim/defaults/cluster.toml") or []


def catalog(models: str | None, cluster: Path | None) -> list[str]:
    if models is not None:
        names = [name.strip() for name in models.split(",")]
        if not all(names):
            raise TraceError(f"--models: expected NAME[,NAME...], got {models!r}")
        return names
    if cluster is not None:
        if not cluster.is_file():
            raise TraceError(f"{cluster}: no such file")
        return _names(cluster.read_text(encoding="utf-8"), str(cluster)) or default_models()
    return default_models()
