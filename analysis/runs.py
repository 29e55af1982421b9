"""Load results into DataFrames: a run directory, a directory of runs, or a sweep.

Only result files are read (docs/design.md): `summary.json` and `requests.parquet` of each
run, through the schema in `sim.schema`. Of a sweep, `sweep.parquet` says which runs
belong to its grid; their rows come from their summaries, like any other run's.
"""

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from sim.schema import (
    COORDINATES,
    REQUESTS,
    SCHEMA_VERSION,
    SUMMARY,
    SWEEP_TABLE,
    summary_problem,
    summary_row,
)
from thaw_kernel.errors import InputError
from thaw_kernel.user_files import check_regular_file, read_bytes

SETTING = (
    "trace",
    "cluster",
    "keep_alive",
    "rate_scale",
    "policy",
)  # a run's coordinates but the seed
LADDER = ("random", "locality", "migration", "startup-aware", "preemption")


class AnalysisInputError(InputError):
    """A path the user gave holds no results; the CLI prints it as one line, exit 2."""


@dataclass
class Runs:
    """One row per run (its coordinates, summary fields and `path`); requests on demand."""

    table: pd.DataFrame

    def requests(self, columns: list[str] | None = None) -> pd.DataFrame:
        """Every run's requests, each row tagged with its run's coordinates."""
        frames = []
        for row in self.table.itertuples(index=False):
            frame = read_parquet(Path(row.path) / REQUESTS, columns)
            for key in COORDINATES:
                frame[key] = getattr(row, key)
            frames.append(frame)
        return pd.concat(frames, ignore_index=True)

    def policies(self) -> list[str]:
        return policy_order(self.table["policy"].unique())


def read_parquet(path: Path, columns: list[str] | None = None) -> pd.DataFrame:
    """A result table; one that is not a regular file or not Parquet (damaged, replaced by
    hand) is refused naming it, rather than read (a FIFO hangs) or traced back."""
    check_regular_file(path, AnalysisInputError)
    try:
        return pd.read_parquet(path, columns=columns)
    except Exception as err:  # pyarrow raises several unrelated types for a bad file
        raise AnalysisInputError(
            f"{path}: not a readable Parquet file: {' '.join(str(err).split())}"
        ) from None


def policy_order(names) -> list[str]:
    """The ladder's order first (each rung adds one idea), then any other policy by name."""
    names = set(names)
    return [p for p in LADDER if p in names] + sorted(names - set(LADDER))


def _run_dirs(path: Path) -> list[Path]:
    """The run directories under `path`: itself, a sweep's listed runs, or every directory
    below holding a summary, but for the hidden ones a run is staged in while written."""
    if (path / SUMMARY).exists():
        return [path]
    if (path / SWEEP_TABLE).is_file():
        runs = read_parquet(path / SWEEP_TABLE)
        return [path / run for run in runs["run"]] if "run" in runs else []
    found = (summary.parent for summary in path.rglob(SUMMARY))
    return sorted(d for d in found if not any(p.startswith(".") for p in d.relative_to(path).parts))


def read_run_summary(run_dir: Path) -> dict:
    """A run's summary, checked: run directories are written whole, so one that is missing,
    does not parse, is of another schema version, or lacks what `analysis` reads is
    damaged, and is refused naming the file (and the key)."""
    path = run_dir / SUMMARY
    data = read_bytes(path, error=AnalysisInputError)  # a FIFO is refused, never read
    try:
        summary = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as err:
        raise AnalysisInputError(
            f"{path}: not valid JSON ({' '.join(str(err).split())[:80]}): a run directory "
            "is written whole, so this one is damaged"
        ) from None
    if isinstance(summary, dict) and summary.get("schema_version") != SCHEMA_VERSION:
        raise AnalysisInputError(
            f"{path}: schema_version {summary.get('schema_version')!r}; this "
            f"thaw reads version {SCHEMA_VERSION} (write it again with this thaw)"
        )
    problem = summary_problem(summary)
    if problem is not None:
        raise AnalysisInputError(f"{path}: {problem}")
    return summary


def read_runs(path: str | Path) -> Runs:
    """The runs under `path` (a run directory, a sweep, or any directory of run
    directories, searched recursively), sorted by their coordinates."""
    path = Path(path)
    if not path.is_dir():
        raise AnalysisInputError(f"{path}: no such directory")
    rows = [
        {**summary_row(read_run_summary(run_dir)), "path": str(run_dir)}
        for run_dir in _run_dirs(path)
    ]
    if not rows:
        raise AnalysisInputError(f"{path}: no run directories (with a summary.json) found")
    table = pd.DataFrame(rows)
    duplicated = table.duplicated(list(COORDINATES))
    if duplicated.any():
        first = table[table.duplicated(list(COORDINATES), keep=False)]["path"].head(2).tolist()
        raise AnalysisInputError(
            f"{path}: two runs with the same policy, trace, rate scale, cluster, keep-alive "
            f"and seed: "
            f"{first[0]} and {first[1]}"
        )
    table["policy"] = pd.Categorical(table["policy"], policy_order(table["policy"].unique()))
    table = table.sort_values(["trace", "cluster", "keep_alive", "rate_scale", "policy", "seed"])
    table["policy"] = table["policy"].astype(str)
    return Runs(table.reset_index(drop=True))
