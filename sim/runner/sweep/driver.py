"""A sweep: every run of a grid, each in its own run directory, and one table of them all.

    DIR/sweep.toml              the resolved grid (`python -m sim sweep DIR/sweep.toml`
                                runs it again)
    DIR/runs/<run>/             one run directory per grid point, written atomically
    DIR/sweep.parquet           one row per run: its coordinates and its summary

Resuming is the same command again: a run whose directory holds a summary of the same
point, configuration and trace is skipped, so an interrupted sweep loses at most the runs
in flight and repeats none that finished. The table is rebuilt from the run directories
(atomically) at the end of every invocation.
"""

import hashlib
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import tomli_w

import traces
from sim.config import read_config, with_keep_alive
from sim.results.run_dir import KIND as RUN
from sim.results.run_dir import write_run
from sim.results.summary import file_sha256
from sim.runner.sweep.backends import Task, local_backend, ray_backend
from sim.runner.sweep.grid import RunPoint, Sweep
from sim.schema import SWEEP_RUNS, SWEEP_TABLE, read_summary, summary_row
from sim.spec import ClusterConfig
from thaw_kernel import seeds
from thaw_kernel.publish import (
    check_replaceable,
    created_directories,
    is_output,
    is_scratch,
    write_file_atomically,
    write_marker,
)

SWEEP_FILE = "sweep.toml"
KIND = "sweep"


@dataclass(frozen=True)
class SweepOutcome:
    table: pd.DataFrame  # the rows of sweep.parquet
    ran: int
    skipped: int
    wall_s: float


def check_sweep_dir(out: Path) -> None:
    """Refuse an output path holding anything but a sweep thaw wrote (or nothing)."""
    if is_output(out, KIND):
        return
    check_replaceable(out, KIND, "--out")


def _check_run_dirs(runs: Path, points: list[RunPoint]) -> None:
    """Refuse, before any run, a run directory the sweep would have to replace but that
    holds something thaw did not write there (a file the user added, say)."""
    for point in points:
        check_replaceable(runs / point.name, RUN, "--out")


Setting = tuple[str | None, str | None]  # (cluster path, keep-alive) of a RunPoint


def _configs(sweep: Sweep) -> dict[Setting, ClusterConfig]:
    """Each cluster's configuration under each keep-alive, with every trace checked against
    its catalog now, so that bad input fails before the first run rather than in the
    middle of the sweep."""
    configs = {}
    for cluster in sweep.clusters:
        config = read_config(cluster)
        for trace in sweep.traces:
            traces.read(trace, list(config.models), seeds.rng(0, "trace"), config.zipf_exponent)
        for keep_alive in sweep.keep_alives:
            cluster_path = None if cluster is None else str(cluster)
            configs[cluster_path, keep_alive] = (
                config if keep_alive is None else with_keep_alive(config, keep_alive)
            )
    return configs


def _setting(point: RunPoint) -> Setting:
    return (point.cluster_path, point.keep_alive)


def _finished(summary: dict | None, point: RunPoint, config_sha: str, trace_sha: str) -> bool:
    return (
        summary is not None
        and summary.get("sweep") == point.record()
        and summary.get("config_sha256") == config_sha
        and summary.get("trace", {}).get("sha256") == trace_sha
    )


def _remove_leftovers(runs: Path) -> None:
    """Scratch directories of runs killed while being written: their staging copies and
    the probes of `runs` itself (see thaw_kernel.publish)."""
    for entry in runs.glob(".*"):
        if entry.is_dir() and is_scratch(entry.name):
            shutil.rmtree(entry)


def collect(sweep: Sweep) -> pd.DataFrame:
    """sweep.parquet's rows: one per grid point with a finished run, in grid order."""
    rows = []
    for point in sweep.points():
        summary = read_summary(sweep.out / SWEEP_RUNS / point.name)
        if summary is not None and summary.get("sweep") == point.record():
            rows.append({**summary_row(summary), "run": f"{SWEEP_RUNS}/{point.name}"})
    return pd.DataFrame(rows)


def run_sweep(sweep: Sweep, progress: Callable[[int, int], None] | None = None) -> SweepOutcome:
    """Run what is left of `sweep` and rebuild its table; `progress(done, total)` per run."""
    started = time.perf_counter()
    check_sweep_dir(sweep.out)
    configs = _configs(sweep)
    trace_sha = {str(t): file_sha256(t) for t in sweep.traces}
    config_sha = {k: hashlib.sha256(c.to_toml().encode()).hexdigest() for k, c in configs.items()}
    runs = sweep.out / SWEEP_RUNS
    points = sweep.points()
    todo: list[Task] = [
        (point, configs[_setting(point)])
        for point in points
        if not _finished(
            read_summary(runs / point.name),
            point,
            config_sha[_setting(point)],
            trace_sha[point.trace_path],
        )
    ]
    skipped = len(points) - len(todo)
    _check_run_dirs(runs, [point for point, _ in todo])
    if sweep.backend == "ray":
        backend = ray_backend(sweep.jobs, sweep.ray_address)
    else:
        backend = local_backend(sweep.jobs)
    with backend as execute:  # connected (or failed) before anything is written
        with created_directories(runs):
            write_marker(sweep.out, KIND, [SWEEP_FILE, SWEEP_TABLE, SWEEP_RUNS])
            write_file_atomically(
                sweep.out / SWEEP_FILE,
                lambda p: p.write_text(tomli_w.dumps(sweep.to_table())),
            )
        _remove_leftovers(runs)
        if progress is not None:
            progress(skipped, len(points))
        for done, output in enumerate(execute(todo), start=skipped + 1):
            write_run(
                runs / output.point.name,
                output.requests,
                output.instances,
                output.summary,
                output.config_toml,
            )
            if progress is not None:
                progress(done, len(points))
    table = collect(sweep)
    write_file_atomically(sweep.out / SWEEP_TABLE, lambda p: table.to_parquet(p, index=False))
    return SweepOutcome(table, len(todo), skipped, time.perf_counter() - started)
