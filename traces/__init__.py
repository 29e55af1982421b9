"""Trace readers: every supported format into the canonical request table of docs/design.md.

`load(path, models, ...)` detects the format from the header (or takes `fmt`), reads it,
turns invocations into requests where the format counts function calls, gives requests
models and token lengths where the format names none, applies the transformations of
`options`, and checks that every model is in the catalog. `read` does the same and also
says which format it read and how many rows were out of order.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from thaw_kernel.user_files import check_regular_file
from traces import transform
from traces.azure_llm import COLUMNS as AZURE_LLM_COLUMNS
from traces.azure_llm import MULTIMODAL_COLUMNS, read_azure_llm, read_azure_multimodal
from traces.canonical import REQUIRED as CANONICAL_COLUMNS
from traces.canonical import read_canonical
from traces.csv_file import check_text, header, require_columns
from traces.errors import TraceError, is_parquet, where
from traces.functions_2019 import KEYS as FUNCTIONS_2019_COLUMNS
from traces.functions_2019 import read_functions_2019
from traces.functions_2021 import COLUMNS as FUNCTIONS_2021_COLUMNS
from traces.functions_2021 import read_functions_2021
from traces.labels import categorical
from traces.mapping import FUNCTION_APPS, function_models
from traces.options import Options
from traces.popularity import assign_models
from traces.processed import COLUMNS as PROCESSED_COLUMNS
from traces.processed import read_processed
from traces.timestamps import first_value, has_zone
from traces.tokens import draw_tokens

__all__ = [
    "FORMATS",
    "Options",
    "Trace",
    "TraceError",
    "default_trace",
    "detect_format",
    "read",
]

Reader = Callable[[Path, Options, np.random.Generator], pd.DataFrame]


def _plain(reader: Callable[[Path], pd.DataFrame]) -> Reader:
    return lambda path, _options, _rng: reader(path)


@dataclass(frozen=True)
class Format:
    columns: list[str]  # the header names that identify it
    reader: Reader
    in_time_order: bool  # rows are requests that should already be sorted by arrival


# Detection tries these in order; the first whose columns the header has wins (the
# multimodal layout before the text one, whose columns it includes).
FORMATS: dict[str, Format] = {
    "canonical": Format(CANONICAL_COLUMNS, _plain(read_canonical), True),
    "azure-multimodal-2025": Format(MULTIMODAL_COLUMNS, _plain(read_azure_multimodal), True),
    "azure-llm-2023": Format(AZURE_LLM_COLUMNS, _plain(read_azure_llm), True),
    "azure-llm-2024": Format(AZURE_LLM_COLUMNS, _plain(read_azure_llm), True),
    "processed": Format(PROCESSED_COLUMNS, _plain(read_processed), True),
    "azure-functions-2019": Format(FUNCTIONS_2019_COLUMNS, read_functions_2019, False),
    "azure-functions-2021": Format(FUNCTIONS_2021_COLUMNS, read_functions_2021, False),
}


@dataclass
class Trace:
    """A loaded trace: the canonical frame, the format read, and what reading found."""

    frame: pd.DataFrame
    format: str
    out_of_order: int | None  # rows before the row above them; None where rows are not
    notes: dict = field(default_factory=dict)  # format-specific facts (functions, ...)


def default_trace() -> Path:
    """The bundled Azure LLM 2023 code trace (see traces/data/ATTRIBUTION.md)."""
    return Path(str(resources.files("traces").joinpath("data/AzureLLMInferenceTrace_code.csv")))


def detect_format(path: Path) -> str:
    if is_parquet(path):
        return "canonical"
    check_text(path)
    names = header(path)
    columns = set(names)
    for name, spec in FORMATS.items():
        if set(spec.columns) <= columns:
            if spec.columns == AZURE_LLM_COLUMNS:
                return "azure-llm-2024" if has_zone(first_value(path, "TIMESTAMP")) else name
            return name
    if len(names) == 1 and any(d in names[0] for d in ";\t|"):
        raise TraceError(f"{path}: line 1: wrong delimiter: fields must be separated by commas")

    def shared(name: str) -> tuple[int, int]:  # most columns in common, then fewest missing
        return len(columns & set(FORMATS[name].columns)), -len(FORMATS[name].columns)

    closest = max(FORMATS, key=shared)
    if shared(closest)[0] >= 2:
        missing = [c for c in FORMATS[closest].columns if c not in columns]
        raise TraceError(
            f"{path}: line 1: missing column(s) {', '.join(missing)} of the {closest} format "
            f"(header has {', '.join(names)})"
        )
    known = "; ".join(f"{n} ({','.join(s.columns)})" for n, s in FORMATS.items())
    raise TraceError(f"{path}: line 1: unrecognised header {names}; known formats: {known}")


def reference_tokens(path: Path | None) -> pd.DataFrame:
    """Token columns of a reference trace (for `--tokens trace[:PATH]`)."""
    path = path or default_trace()
    frame = _read_rows(path, None, Options(), np.random.default_rng(0))
    if "input_tokens" not in frame:
        raise TraceError(f"{path}: has no token counts to draw from")
    return frame


def _read_rows(path: Path, fmt: str | None, options: Options, rng: np.random.Generator):
    check_regular_file(path, TraceError)
    if fmt is not None and fmt not in FORMATS:
        raise TraceError(f"unknown trace format {fmt!r} (known: {', '.join(FORMATS)})")
    if fmt is not None and not is_parquet(path):  # a forced format the header must have
        check_text(path)
        require_columns(header(path), FORMATS[fmt].columns, path)
    return FORMATS[fmt or detect_format(path)].reader(path, options, rng)


def read(
    path: str | Path,
    models: list[str],
    rng: np.random.Generator,
    zipf_exponent: float = 1.0,
    fmt: str | None = None,
    options: Options | None = None,
) -> Trace:
    """The canonical trace in `path`, sorted by arrival (stably), models checked."""
    path, options = Path(path), options or Options()
    fmt = fmt or options.format
    check_regular_file(path, TraceError)
    name = fmt or detect_format(path)
    frame = _read_rows(path, name, options, rng)
    notes, frame.attrs = dict(frame.attrs), {}
    named = "model" in frame
    if named:  # checked in file order, so that an error names the file's line
        frame = transform.remap(frame, options.remap) if options.remap else frame
        _check_catalog(frame, models, path)
    else:
        _check_remap(options.remap, models)
    late = int((np.diff(frame["arrival_s"].to_numpy()) < 0).sum())
    if late:  # a sort copies every column: skipped for the usual, sorted file
        frame = frame.sort_values("arrival_s", kind="stable", ignore_index=True)
    late = late if FORMATS[name].in_time_order else None
    apps = notes.pop(FUNCTION_APPS, None)
    if apps is not None:
        notes["apps"] = int(apps.max()) + 1 if len(apps) else 0
    if "function" in frame:
        if options.mapping == "app" and notes["apps"] > len(models):
            raise TraceError(
                f"{path}: --mapping app: {notes['apps']} applications, but the catalog has "
                f"{len(models)} models (one each is needed)"
            )
        function = frame.pop("function").to_numpy()
        codes = function_models(function, notes["functions"], len(models), options.mapping, apps)
        frame.insert(1, "model", categorical(codes, models))
    elif not named:
        frame.insert(1, "model", assign_models(len(frame), models, zipf_exponent, rng))
    if not named and options.remap:
        frame = transform.remap(frame, options.remap)
    if "input_tokens" not in frame:
        tokens = draw_tokens(options.tokens, len(frame), rng, reference_tokens)
        frame["input_tokens"], frame["output_tokens"] = tokens
    frame = transform.apply(frame, options, rng, scaled=name == "azure-functions-2019")
    if frame.empty:
        raise TraceError(f"{path}: no requests (after --window, --thin or --scale)")
    return Trace(frame, name, late, notes)


def _check_remap(remap: dict[str, str], models: list[str]) -> None:
    unknown = [new for new in remap.values() if new not in models]
    if unknown:
        raise TraceError(f"--remap: {unknown[0]!r} is not in the catalog ({', '.join(models)})")


def _check_catalog(frame: pd.DataFrame, models: list[str], path: Path) -> None:
    unknown = ~frame["model"].isin(models).to_numpy()
    if unknown.any():
        row = int(np.flatnonzero(unknown)[0])
        raise TraceError(
            f"{path}: {where(path, row)}: model {frame['model'].iloc[row]!r} is not in the "
            f"catalog ({', '.join(models)})"
        )
