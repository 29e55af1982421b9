"""What several reproductions build their runs from: a cluster table made into the
simulator's configuration, and token lengths drawn without a reference trace."""

import tempfile
from pathlib import Path

import pandas as pd
import tomli_w

from sim.config import read_config
from sim.spec import ClusterConfig


def config_of(table: dict, name: str) -> ClusterConfig:
    """`table` (a cluster file's contents, built or edited in code) read as the file
    `name` would be, over the defaults and checked alike: `read_config` reads files."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_text(tomli_w.dumps(table))
        return read_config(path)


def no_reference(_: Path | None) -> pd.DataFrame:
    """`draw_tokens`' reference reader for a spec that draws from distributions or
    fixes the lengths: never called."""
    raise AssertionError("the workload's tokens are not resampled from a trace")
