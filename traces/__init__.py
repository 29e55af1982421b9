"""Trace readers: every supported format into the canonical request table of DESIGN.md.

`load(path, models, ...)` detects the format from the header (or takes `fmt`), reads it,
assigns models by popularity where the format names none, and checks that every model
is in the catalog.
"""

from collections.abc import Callable
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from traces.azure_llm import COLUMNS as AZURE_LLM_COLUMNS
from traces.azure_llm import read_azure_llm_2023
from traces.canonical import REQUIRED as CANONICAL_COLUMNS
from traces.canonical import read_canonical
from traces.csv_file import header
from traces.errors import TraceError, line_of
from traces.popularity import assign_models

__all__ = ["FORMATS", "TraceError", "default_trace", "detect_format", "load"]

# name -> (columns that identify it, reader, whether rows name their model)
FORMATS: dict[str, tuple[list[str], Callable[[Path], pd.DataFrame], bool]] = {
    "canonical": (CANONICAL_COLUMNS, read_canonical, True),
    "azure-llm-2023": (AZURE_LLM_COLUMNS, read_azure_llm_2023, False),
}


def default_trace() -> Path:
    """The bundled Azure LLM 2023 code trace (see traces/data/ATTRIBUTION.md)."""
    return Path(str(resources.files("traces").joinpath("data/AzureLLMInferenceTrace_code.csv")))


def _is_parquet(path: Path) -> bool:
    return path.suffix.lower() in (".parquet", ".pq")


def detect_format(path: Path) -> str:
    if _is_parquet(path):
        return "canonical"
    columns = set(header(path))
    for name, (required, _, _) in FORMATS.items():
        if set(required) <= columns:
            return name
    raise TraceError(
        f"{path}: line 1: unrecognised header {sorted(columns)}; known formats: "
        + "; ".join(f"{name} ({','.join(cols)})" for name, (cols, _, _) in FORMATS.items())
    )


def load(
    path: str | Path,
    models: list[str],
    rng: np.random.Generator,
    zipf_exponent: float = 1.0,
    fmt: str | None = None,
) -> pd.DataFrame:
    """The canonical trace in `path`, sorted by arrival (stably), models checked."""
    path = Path(path)
    if not path.is_file():
        raise TraceError(f"{path}: no such file")
    if fmt is not None and fmt not in FORMATS:
        raise TraceError(f"unknown trace format {fmt!r} (known: {', '.join(FORMATS)})")
    _, reader, names_models = FORMATS[fmt or detect_format(path)]
    frame = reader(path)
    if not names_models:
        frame.insert(1, "model", assign_models(len(frame), models, zipf_exponent, rng))
    unknown = ~frame["model"].isin(models).to_numpy()
    if unknown.any():
        row = int(np.flatnonzero(unknown)[0])
        where = f"row {row}" if _is_parquet(path) else f"line {line_of(row)}"
        raise TraceError(
            f"{path}: {where}: model {frame['model'].iloc[row]!r} is not in the catalog "
            f"({', '.join(models)})"
        )
    return frame.sort_values("arrival_s", kind="stable", ignore_index=True)
