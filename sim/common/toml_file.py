"""TOML files as plain tables: a user's file, with one-line errors naming it, and the
simulator's default cluster (`sim/defaults/cluster.toml`), which `traces` also reads for
its default model catalog. Validation is the reader's business (`sim.config`)."""

import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

from sim.common.errors import InputError

DEFAULT_CLUSTER = "sim/defaults/cluster.toml"


def read_toml(path: Path) -> dict[str, Any]:
    """The table in `path`; an unreadable or invalid file is an `InputError` naming it."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"{path}: cannot read: {err}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise InputError(f"{path}: invalid TOML: {' '.join(str(err).split())}") from None


def default_cluster() -> dict[str, Any]:
    """The default cluster's table, unvalidated (`sim.config` validates it on load)."""
    text = resources.files("sim").joinpath("defaults/cluster.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)
