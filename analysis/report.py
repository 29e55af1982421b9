"""`python -m analysis report`: figures (PNG and SVG) and a Markdown report with tables,
for one run, a set of runs, or a sweep.

The output directory is built under a temporary name and renamed into place, so a failed
report leaves nothing half-written; an existing directory is replaced only if it is empty
or a report thaw wrote, unchanged (`thaw_kernel.publish`), never anything else.
"""

from collections.abc import Callable
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure

from analysis import plots
from analysis.runs import SETTING, AnalysisInputError, Runs, read_parquet
from analysis.stats import cost, over_seeds, slo_attainment
from sim.schema import CONFIG, INSTANCES, LOAD_TIERS
from thaw_kernel.errors import InputError
from thaw_kernel.publish import check_replaceable, staged_directory
from thaw_kernel.toml_file import read_toml

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
    out["loads dram/ssd/remote/peer"] = ["/".join(f"{x:.0f}" for x in row) for row in loads]
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


IDLE_WARM = "gpu_seconds_by_state.idle_warm"


def tradeoff_figure(table: pd.DataFrame, title: str) -> Figure:
    """The keep-alive trade-off of one trace and cluster: per rate scale, policy and
    keep-alive, mean cold-start ratio and idle-warm GPU-seconds over seeds."""
    by = ["rate_scale", "policy", "keep_alive"]
    cold = over_seeds(table, "cold_start_ratio", by)
    idle = over_seeds(table, IDLE_WARM, by)
    return plots.keep_alive_tradeoff(cold, idle, title)


def file_label(keep_alive: str) -> str:
    """A keep-alive spec in figure file names: readable, and a plain link in Markdown."""
    return "".join(c if c.isalnum() or c in "_.=" else "_" for c in keep_alive)


def _save(figure: Figure, out: Path, name: str) -> None:
    figure.savefig(out / f"{name}.png", dpi=110)
    figure.set_layout_engine("none")  # laid out once: the SVG reuses it
    with matplotlib.rc_context({"svg.fonttype": "none"}):  # text stays text: small, fast
        figure.savefig(out / f"{name}.svg")
    plt.close(figure)


def _figure_lines(name: str, caption: str) -> list[str]:
    return [f"![{caption}]({name}.png)", "", f"*{caption}*", ""]


def _keep_alive_text(table: pd.DataFrame) -> str:
    """The keep-alives, where the runs vary them (a report of one keep-alive reads as before)."""
    names = table["keep_alive"].unique()
    return "" if len(names) == 1 else f"; keep-alives {', '.join(names)}"


def _section(
    scenario: pd.DataFrame, requests: pd.DataFrame, slo: pd.DataFrame, slo_s: float,
    title: str, suffix: str, out: Path,
) -> list[str]:  # fmt: skip
    """One setting's table and figures (one trace, cluster and keep-alive)."""
    lines = [_markdown(settings_table(scenario, slo, slo_s)), ""]
    for stem, caption, make in _figures(requests, scenario, title):
        _save(make(), out, f"{stem}{suffix}")
        lines += _figure_lines(f"{stem}{suffix}", caption)
    return lines


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
        f"{', '.join(str(s) for s in sorted(table['seed'].unique()))}"
        + _keep_alive_text(table)
        + ".",
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
        lines += ["", f"## {title[0].upper()}{title[1:]}", ""]
        keep_alives = scenario.groupby("keep_alive", sort=False)
        if keep_alives.ngroups == 1:
            lines += _section(scenario, requests[at], slo, slo_s, title, suffix, out)
            continue
        caption = (
            "Cold starts against idle warm GPU time per policy and keep-alive: mean over "
            "seeds with bootstrap 95% intervals (the fixed keep-alives of a policy joined)."
        )
        _save(tradeoff_figure(scenario, title), out, f"keep_alive_tradeoff{suffix}")
        lines += _figure_lines(f"keep_alive_tradeoff{suffix}", caption)
        for keep_alive, runs_under in keep_alives:
            lines += [f"### Keep-alive {keep_alive}", ""]
            under = at & (requests["keep_alive"] == keep_alive)
            lines += _section(
                runs_under, requests[under], slo, slo_s, f"{title}, keep-alive {keep_alive}",
                f"{suffix}-{file_label(keep_alive)}", out,
            )  # fmt: skip
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
