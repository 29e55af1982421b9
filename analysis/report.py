"""`python -m analysis report`: figures (PNG and SVG) and a Markdown report with tables,
for one run, a set of runs, or a sweep.

The output directory is built under a temporary name and renamed into place, so a failed
report leaves nothing half-written; an existing directory is replaced only if it is empty
or a report thaw wrote, unchanged (`sim.common.publish`), never anything else.
"""

from collections.abc import Callable
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure

from analysis import plots
from analysis.load import SETTING, AnalysisInputError, Runs, read_parquet
from analysis.stats import cost, over_seeds, slo_attainment
from sim.common.errors import InputError
from sim.common.publish import check_replaceable, staged_directory
from sim.common.toml_file import read_toml
from sim.results.schema import CONFIG, INSTANCES, LOAD_TIERS

REPORT = "report.md"
KIND = "report"
REQUEST_COLUMNS = [
    "model",
    "server",
    "arrival_s",
    "tier",
    "queue_s",
    "startup_s",
    "migration_pause_s",
    "prefill_s",
    "ttft_s",
    "e2e_s",
    "status",
    "migrations",
]


def _gpus(run_dir: Path) -> int:
    """The run's GPU count, from its resolved configuration (one damaged or replaced by
    hand is refused naming it)."""
    config = read_toml(run_dir / CONFIG)
    try:
        return sum(int(group["count"]) * int(group["gpus"]) for group in config["servers"])
    except (KeyError, TypeError, ValueError):
        raise AnalysisInputError(
            f"{run_dir / CONFIG}: not a resolved configuration (servers' count and gpus)"
        ) from None


def gpu_utilisation(row: pd.Series) -> float:
    """GPU time held by instances over the GPU time the cluster had, for the whole run."""
    return row["gpu_seconds"] / (_gpus(Path(row["path"])) * row["simulated_s"])


def _with_ci(ci: pd.DataFrame, fmt: str) -> pd.Series:
    def cell(row: pd.Series) -> str:
        if pd.isna(row["low"]):
            return fmt.format(row["mean"])
        return f"{fmt.format(row['mean'])} [{fmt.format(row['low'])}, {fmt.format(row['high'])}]"

    return ci.apply(cell, axis=1)


def settings_table(table: pd.DataFrame, slo: pd.DataFrame, slo_s: float) -> pd.DataFrame:
    """One row per setting: TTFT percentiles and SLO attainment with intervals over seeds,
    cost, and where the loads came from (means over seeds)."""
    table = table.merge(slo, on=[*SETTING, "seed"])
    table["gpu_s_per_request"] = cost(table)
    by = ["rate_scale", "policy"]
    p99 = over_seeds(table, "ttft_p99_s", by)
    out = p99[[*by, "seeds"]].rename(columns={"rate_scale": "rate scale"})
    out["rate scale"] = out["rate scale"].map(lambda x: f"x{x:g}")
    out["TTFT p50 (s)"] = _with_ci(over_seeds(table, "ttft_p50_s", by), "{:.2f}")
    out["TTFT p99 (s)"] = _with_ci(p99, "{:.1f}")
    out[f"TTFT <= {slo_s:g} s"] = _with_ci(
        over_seeds(table.assign(pct=table["slo_attainment"] * 100), "pct", by), "{:.1f}%"
    )
    load_columns = [f"loads_by_tier.{tier}" for tier in LOAD_TIERS]
    columns = ["gpu_s_per_request", *load_columns, "migrations", "migration_pause_p99_s",
               "preemptions"]  # fmt: skip
    # None (no migrations) becomes NaN; rows come out in over_seeds' order.
    means = table[by].join(table[columns].astype(float)).groupby(by, sort=False).mean()
    loads = means[load_columns].to_numpy()
    out["GPU-s / request"] = [f"{x:.1f}" for x in means["gpu_s_per_request"]]
    out["loads dram/ssd/remote"] = ["/".join(f"{x:.0f}" for x in row) for row in loads]
    out["migrations"] = [f"{x:.0f}" for x in means["migrations"]]
    out["migration pause p99 (s)"] = [
        "-" if pd.isna(x) else f"{x:.3f}" for x in means["migration_pause_p99_s"]
    ]
    out["preemptions"] = [f"{x:.0f}" for x in means["preemptions"]]
    return out


def _markdown(frame: pd.DataFrame) -> str:
    lines = ["| " + " | ".join(frame.columns) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in frame.to_numpy()]
    return "\n".join(lines)


def _figures(
    requests: pd.DataFrame, table: pd.DataFrame, title: str
) -> list[tuple[str, str, Callable[[], Figure]]]:
    """(file stem, caption, figure maker) for one trace and cluster."""
    figures = [
        (
            "ttft_cdf",
            "TTFT distribution per policy (all seeds pooled).",
            lambda: plots.ttft_cdf(requests, title),
        ),
        (
            "breakdown",
            "Where TTFT goes: mean parts over all requests and over each run's "
            "slowest 1%, and migration pauses.",
            lambda: plots.breakdown(requests, title),
        ),
        (
            "loads_by_tier",
            "Cold starts by the tier they loaded from.",
            lambda: plots.loads_by_tier(table, title),
        ),
    ]
    if table["rate_scale"].nunique() > 1:
        ci = over_seeds(table, "ttft_p99_s", ["rate_scale", "policy"])
        figures.insert(
            1,
            (
                "p99_vs_load",
                "p99 TTFT against load, mean over seeds with its bootstrap 95% interval.",
                lambda: plots.p99_vs_load(ci, title),
            ),
        )
    finished = table.dropna(subset=["ttft_p99_s"])  # runs with a completed request
    top = finished[finished["rate_scale"] == finished["rate_scale"].max()]
    best = top.groupby("policy", observed=True)["ttft_p99_s"].mean().idxmin()
    one = top[top["policy"] == best].sort_values("seed").iloc[0]
    run_title = f"{best}, seed {one['seed']}, arrival rate x{one['rate_scale']:g}"
    at = (requests["policy"] == best) & (requests["seed"] == one["seed"])
    at &= requests["rate_scale"] == one["rate_scale"]
    figures.append(
        (
            "timeline",
            f"One run over time ({run_title}: the lowest mean p99 at the "
            "highest load, its first seed).",
            lambda: plots.timeline(
                requests[at],
                read_parquet(Path(one["path"]) / INSTANCES),
                _gpus(Path(one["path"])),
                f"{title}, {run_title}",
                gpu_utilisation(one),
            ),
        )
    )
    return figures


def _build(runs: Runs, out: Path, slo_s: float, source: Path) -> None:
    if not (runs.table["completed"] > 0).any():
        raise AnalysisInputError(f"{source}: no run completed a request; nothing to report")
    table = runs.table
    requests = runs.requests(REQUEST_COLUMNS)
    slo = slo_attainment(requests, slo_s)
    scenarios = table.groupby(["trace", "cluster"], sort=False)
    lines = [
        f"# thaw report: {source}",
        "",
        f"{len(table)} run{'s' * (len(table) > 1)}: policies {', '.join(runs.policies())}; "
        "rate scales "
        f"{', '.join(f'x{x:g}' for x in sorted(table['rate_scale'].unique()))}; seeds "
        f"{', '.join(str(s) for s in sorted(table['seed'].unique()))}.",
        "",
        "Cells are means over seeds with a bootstrap 95% interval over seeds in brackets "
        "(none with one seed; with few seeds intervals are narrow and under-cover). "
        f"TTFT <= {slo_s:g} s is the share of requests meeting that SLO (unfinished requests "
        "miss it). GPU-s / request: GPU time held (start-up and keep-alive included) per "
        "completed request. Loads and migrations: per run, mean over seeds.",
    ]
    for (trace, cluster), scenario in scenarios:
        title = f"trace {trace} on cluster {cluster}"
        suffix = "" if scenarios.ngroups == 1 else f"-{trace}-{cluster}"
        at = (requests["trace"] == trace) & (requests["cluster"] == cluster)
        lines += [
            "",
            f"## {title[0].upper()}{title[1:]}",
            "",
            _markdown(settings_table(scenario, slo, slo_s)),
            "",
        ]
        for stem, caption, make in _figures(requests[at], scenario, title):
            figure = make()
            figure.savefig(out / f"{stem}{suffix}.png", dpi=110)
            figure.set_layout_engine("none")  # laid out once: the SVG reuses it
            with matplotlib.rc_context({"svg.fonttype": "none"}):  # text stays text: small, fast
                figure.savefig(out / f"{stem}{suffix}.svg")
            plt.close(figure)
            lines += [f"![{caption}]({stem}{suffix}.png)", "", f"*{caption}*", ""]
    (out / REPORT).write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")


def check_report_dir(out: Path) -> None:
    try:
        check_replaceable(out, KIND, "-o")
    except InputError as err:
        raise AnalysisInputError(str(err)) from None


def write_report(runs: Runs, out: Path, slo_s: float, source: Path) -> None:
    """Build the report in a staging directory beside `out`, then move it into place."""
    check_report_dir(out)
    with staged_directory(out, KIND) as staging:
        _build(runs, staging, slo_s, source)
