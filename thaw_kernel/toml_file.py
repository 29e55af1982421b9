"""TOML files as plain tables: a user's file, with one-line errors naming it, and the
simulator's default cluster (`sim/defaults/cluster.toml`), which `traces` also reads for
its default model catalog. Validation is the reader's business (`sim.config`)."""

import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

from thaw_kernel.errors import InputError
from thaw_kernel.user_files import read_text

DEFAULT_CLUSTER = "sim/defaults/cluster.toml"


def read_toml(path: Path) -> dict[str, Any]:
    """The table in `path`; an unreadable or invalid file is an `InputError` naming it
    (a directory, FIFO or device is refused unread: `thaw_kernel.user_files`)."""
    text = read_text(path)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise InputError(f"{path}: invalid TOML: {' '.join(str(err).split())}") from None
    except RecursionError:
        raise InputError(f"{path}: invalid TOML: nested too deeply") from None


def default_cluster() -> dict[str, Any]:
    """The default cluster's table, unvalidated (`sim.config` validates it on load)."""
    text = resources.files("sim").joinpath("defaults/cluster.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)
