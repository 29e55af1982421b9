"""Figures meant to be read at a glance: labelled axes with units, one colour per policy
across every figure, log scales where latencies span orders of magnitude.

Each function takes DataFrames from `analysis.runs` / `analysis.stats` and returns a
matplotlib Figure; `analysis.report` saves them.
"""

import matplotlib
import matplotlib.pyplot as plt
import matplotlib.ticker
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from analysis.runs import LADDER, policy_order
from sim.schema import LOAD_TIERS

TIER_COLOURS = {"dram": "#9ecae1", "ssd": "#4292c6", "remote": "#08306b", "peer": "#41ab5d"}
TIER_NAMES = {"dram": "DRAM", "ssd": "SSD", "remote": "remote store", "peer": "a peer's GPUs"}
PART_COLOURS = {"queue": "#bdbdbd", **TIER_COLOURS, "prefill": "#fdae6b"}
PART_LABELS = {
    "queue": "queue",
    **{tier: f"start-up + load from {name}" for tier, name in TIER_NAMES.items()},
    "prefill": "prefill (incl. pauses before the first token)",
}


def policy_colour(policy: str) -> str:
    """The same colour for a policy in every figure: the ladder's rungs first."""
    palette = plt.get_cmap("tab10").colors
    if policy in LADDER:
        return matplotlib.colors.to_hex(palette[LADDER.index(policy)])
    spare = len(palette) - len(LADDER)
    return matplotlib.colors.to_hex(palette[len(LADDER) + sum(policy.encode()) % spare])


def _scale_label(rate_scale: float) -> str:
    return f"arrival rate x{rate_scale:g}"


def _log_if_wide(ax, values: np.ndarray, axis: str = "y") -> None:
    """A log axis when positive values span more than a factor of 20."""
    positive = values[np.isfinite(values) & (values > 0)]
    if len(positive) and positive.max() / positive.min() > 20:
        (ax.set_yscale if axis == "y" else ax.set_xscale)("log")


def _bar_room(ax, bars: int) -> None:
    """Room for at least three bars, so that one or two do not fill the panel."""
    extra = max(0.0, (3 - bars) / 2)
    ax.set_xlim(-0.5 - extra, bars - 0.5 + extra)


def _panel_per_scale(frame: pd.DataFrame, height: float) -> tuple[list[float], Figure, list]:
    """A row of panels sharing their y axis, one per rate scale in `frame`."""
    scales = sorted(frame["rate_scale"].unique())
    fig, axes = plt.subplots(1, len(scales), figsize=(5.5 * len(scales), height), sharey=True,
                             squeeze=False, layout="constrained")  # fmt: skip
    return scales, fig, list(axes[0])


def ttft_cdf(requests: pd.DataFrame, title: str) -> Figure:
    """Per rate scale, each policy's TTFT distribution, all seeds pooled (completed
    requests). Log time axis; a logit share axis, so that the median and the tail up to
    p99.9 are equally legible."""
    scales, fig, axes = _panel_per_scale(requests, height=4.6)
    done = requests[requests["status"] == "done"]
    for ax, scale in zip(axes, scales, strict=True):
        at = done[done["rate_scale"] == scale]
        for policy in policy_order(at["policy"].unique()):
            ttft = np.sort(at.loc[at["policy"] == policy, "ttft_s"].to_numpy())
            share = np.arange(1, len(ttft) + 1) / (len(ttft) + 1)  # stays below 1 for logit
            p99 = np.percentile(ttft, 99)
            ax.step(
                ttft,
                share,
                where="post",
                color=policy_colour(policy),
                label=f"{policy} (pooled p99 {p99:.1f} s)",
            )
        ax.set_xscale("log")
        ax.set_xlim(np.percentile(at["ttft_s"], 0.5) / 1.5, at["ttft_s"].max() * 1.5)
        ax.set_yscale("logit")
        ax.set_ylim(0.01, 0.999)
        ax.set_yticks(
            [0.01, 0.1, 0.5, 0.9, 0.99, 0.999], ["1%", "10%", "50%", "90%", "99%", "99.9%"]
        )
        ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel("time to first token (s, log scale)")
        ax.set_title(_scale_label(scale))
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(loc="upper left", fontsize=8)
    axes[0].set_ylabel("requests with TTFT <= x (logit scale)")
    seeds = done["seed"].nunique()
    fig.suptitle(f"TTFT distribution: {title} ({seeds} seed{'s' * (seeds > 1)} pooled)")
    return fig


def p99_vs_load(ci: pd.DataFrame, title: str) -> Figure:
    """p99 TTFT against the arrival-rate scale, per policy: mean over seeds with its
    bootstrap 95% band (`ci` from `stats.over_seeds(table, "ttft_p99_s")`)."""
    fig, ax = plt.subplots(figsize=(6.5, 4.5), layout="constrained")
    for policy in policy_order(ci["policy"].unique()):
        rows = ci[ci["policy"] == policy].sort_values("rate_scale")
        colour = policy_colour(policy)
        ax.plot(rows["rate_scale"], rows["mean"], marker="o", color=colour, label=policy)
        ax.fill_between(
            rows["rate_scale"], rows["low"], rows["high"], color=colour, alpha=0.15, linewidth=0
        )
    _log_if_wide(ax, ci[["mean", "low", "high"]].to_numpy().ravel())
    scales = sorted(ci["rate_scale"].unique())
    ax.set_xscale("log")  # rate scales are multiples: x0.5, x1, x2 equally spaced
    ax.set_xticks(scales, [f"x{s:g}" for s in scales])
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_xlabel("arrival rate (multiple of the trace's rate, log scale)")
    ax.set_ylabel("p99 TTFT (s)" + (", log scale" if ax.get_yscale() == "log" else ""))
    seeds = ci["seeds"]
    seed_text = f"{seeds.min()}" if seeds.min() == seeds.max() else f"{seeds.min()}-{seeds.max()}"
    ax.set_title(
        f"p99 TTFT vs load: {title}\nmean over {seed_text} seeds, "
        "band: bootstrap 95% CI over seeds",
        fontsize=10,
    )
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(title="policy")
    return fig


def _parts(requests: pd.DataFrame) -> pd.DataFrame:
    """Per policy, the mean seconds of each TTFT part; startup split by start tier."""
    startup = {
        tier: requests["startup_s"].where(requests["tier"] == tier, 0.0) for tier in LOAD_TIERS
    }
    parts = pd.DataFrame(
        {
            "queue": requests["queue_s"],
            **startup,
            "prefill": requests["prefill_s"],
            "policy": requests["policy"],
        }
    )
    return parts.groupby("policy", observed=True).mean()


def breakdown(requests: pd.DataFrame, title: str) -> Figure:
    """Where TTFT goes, per policy and rate scale: the mean of each part over all
    completed requests, the same over the slowest 1% of each run, and the migration
    pauses migrated requests saw (at any time, so outside the TTFT parts)."""
    done = requests[requests["status"] == "done"]
    scales = sorted(done["rate_scale"].unique())
    fig, axes = plt.subplots(
        len(scales),
        3,
        figsize=(15, 3.8 * len(scales)),
        squeeze=False,
        layout="constrained",
        width_ratios=[1, 1, 0.7],
    )
    runs = ["policy", "seed", "rate_scale"]
    p99 = done.groupby(runs, observed=True)["ttft_s"].transform(lambda t: np.percentile(t, 99))
    for row, scale in zip(axes, scales, strict=True):
        at = done["rate_scale"] == scale
        order = policy_order(done.loc[at, "policy"].unique())
        panels = [
            (done[at], "mean over all requests"),
            (done[at & (done["ttft_s"] >= p99)], "mean over each run's slowest 1%"),
        ]
        for ax, (subset, label) in zip(row[:2], panels, strict=True):
            parts = _parts(subset).reindex(order)
            bottom = np.zeros(len(order))
            for part, colour in PART_COLOURS.items():
                ax.bar(order, parts[part], bottom=bottom, color=colour, label=PART_LABELS[part])
                bottom += parts[part].to_numpy()
            for x, total in enumerate(bottom):
                ax.annotate(
                    f"{total:.1f} s",
                    (x, total),
                    xytext=(0, 2),
                    textcoords="offset points",
                    ha="center",
                    fontsize=8,
                )
            _bar_room(ax, len(order))
            ax.set_ylabel("seconds per request")
            ax.set_title(f"{_scale_label(scale)}: TTFT parts, {label}", fontsize=10)
            ax.margins(y=0.12)
        _pauses(row[2], done[at], order, scale)
    fig.legend(
        *axes[0][0].get_legend_handles_labels(), loc="outside lower center", ncols=5, fontsize=9
    )
    fig.suptitle(f"Where time to first token goes: {title}")
    return fig


def _pauses(ax, done: pd.DataFrame, order: list[str], scale: float) -> None:
    migrated = done[done["migrations"] > 0]
    stats = migrated.groupby("policy", observed=True)["migration_pause_s"]
    mean = stats.mean().reindex(order).fillna(0)
    p99 = stats.quantile(0.99).reindex(order).fillna(0)
    x = np.arange(len(order))
    ax.bar(x - 0.2, mean, 0.4, color="#74c476", label="mean")
    ax.bar(x + 0.2, p99, 0.4, color="#238b45", label="p99")
    counts = migrated.groupby("policy", observed=True).size().reindex(order).fillna(0)
    for i, n in enumerate(counts):
        ax.annotate(
            f"n={n:.0f}",
            (i, max(mean.iloc[i], p99.iloc[i])),
            xytext=(0, 2),
            textcoords="offset points",
            ha="center",
            fontsize=8,
        )
    ax.set_xticks(x, order, rotation=20, ha="right")
    _bar_room(ax, len(order))
    ax.set_ylabel("pause per migrated request (s)")
    ax.set_title(
        f"{_scale_label(scale)}: migration pauses\n(n: migrated requests, all seeds)", fontsize=10
    )
    ax.legend(fontsize=8)
    ax.margins(y=0.12)


def loads_by_tier(table: pd.DataFrame, title: str) -> Figure:
    """Cold starts per run by the tier they loaded from, per policy and rate scale
    (mean over seeds)."""
    scales, fig, axes = _panel_per_scale(table, height=4.2)
    columns = [f"loads_by_tier.{tier}" for tier in LOAD_TIERS]
    for ax, scale in zip(axes, scales, strict=True):
        at = table[table["rate_scale"] == scale]
        order = policy_order(at["policy"].unique())
        means = at.groupby("policy")[columns].mean().reindex(order)
        bottom = np.zeros(len(order))
        for tier, column in zip(LOAD_TIERS, columns, strict=True):
            ax.bar(
                order,
                means[column],
                bottom=bottom,
                color=TIER_COLOURS[tier],
                label=f"from {TIER_NAMES[tier]}",
            )
            bottom += means[column].to_numpy()
        _bar_room(ax, len(order))
        ax.set_title(_scale_label(scale))
        ax.set_xlabel("policy")
        ax.legend(fontsize=8)
    axes[0].set_ylabel("cold starts per run (mean over seeds)")
    fig.suptitle(f"Checkpoint loads by source tier: {title}")
    return fig


def _occupancy(starts: np.ndarray, ends: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """How many [start, end) intervals hold each time of `grid`."""
    return np.searchsorted(np.sort(starts), grid, side="right") - np.searchsorted(
        np.sort(ends), grid, side="right"
    )


def timeline(
    requests: pd.DataFrame,
    instances: pd.DataFrame,
    gpus: int,
    title: str,
    gpu_utilisation: float | None,
) -> Figure:
    """One run over time: requests by stage (waiting for a placement, waiting for their
    instance to start, being served), the GPUs instances hold (starting, or warm) against
    the cluster's, and the warm instances (the run's instances.parquet)."""
    done = requests[requests["status"] == "done"]
    arrival = done["arrival_s"].to_numpy()
    placed = arrival + done["queue_s"].to_numpy()
    ready = placed + done["startup_s"].to_numpy()
    end = arrival + done["e2e_s"].to_numpy()
    grid = np.linspace(0, max(end.max(), instances["ended_s"].max()), 2000)
    minutes = grid / 60
    fig, (top, middle, bottom) = plt.subplots(
        3, 1, figsize=(11, 8), sharex=True, layout="constrained"
    )
    stages = {
        "waiting for a placement": (arrival, placed, "#bdbdbd"),
        "waiting for its instance to start": (placed, ready, "#4292c6"),
        "being served (prefill, decode)": (ready, end, "#fdae6b"),
    }
    counts = [_occupancy(s, e, grid) for s, e, _ in stages.values()]
    top.stackplot(minutes, counts, labels=list(stages), colors=[c for *_, c in stages.values()])
    top.set_ylabel("requests in the system")
    top.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    held = instances["gpus"].to_numpy()
    allocated = np.repeat(instances["allocated_s"].to_numpy(), held)
    warm_from = np.repeat(instances["ready_s"].fillna(instances["ended_s"]).to_numpy(), held)
    ended = np.repeat(instances["ended_s"].to_numpy(), held)
    middle.stackplot(
        minutes,
        [_occupancy(allocated, warm_from, grid), _occupancy(warm_from, ended, grid)],
        labels=["starting (start-up + load)", "warm (serving or kept alive)"],
        colors=["#4292c6", "#fdae6b"],
    )
    middle.axhline(gpus, color="black", linewidth=1, linestyle="--", label="the cluster's GPUs")
    middle.set_ylabel("GPUs held")
    middle.set_ylim(0, gpus * 1.15)
    middle.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    warm = instances.dropna(subset=["ready_s"])
    bottom.plot(
        minutes,
        _occupancy(warm["ready_s"].to_numpy(), warm["ended_s"].to_numpy(), grid),
        color="#d94801",
    )
    bottom.set_ylabel("warm instances")
    bottom.set_xlabel("simulated time (minutes)")
    note = (
        ""
        if gpu_utilisation is None
        else f"(instances held {gpu_utilisation:.0%} of the GPU time, keep-alive included)"
    )
    fig.suptitle(f"One run over time: {title}\n{note.strip()}")
    return fig


def keep_alive_tradeoff(cold: pd.DataFrame, idle: pd.DataFrame, title: str) -> Figure:
    """Per rate scale, each (policy, keep-alive)'s cold-start ratio against the GPU time its
    instances held idle and warm: the trade-off a keep-alive policy chooses a point on
    (Shahrad et al., ATC '20, Figure 15). `cold` and `idle` come from `stats.over_seeds`
    over (rate_scale, policy, keep_alive), in the same order: means over seeds, whiskers
    their bootstrap 95% intervals. The fixed keep-alives of a policy are joined by a line."""
    scales, fig, axes = _panel_per_scale(cold, height=4.6)
    frame = cold.join(idle[["mean", "low", "high"]].add_suffix("_idle"))
    for column in ("mean", "low", "high"):
        frame[column] *= 100  # a share of requests, as a percentage
    for ax, scale in zip(axes, scales, strict=True):
        at = frame[frame["rate_scale"] == scale]
        for policy in policy_order(at["policy"].unique()):
            rows = at[at["policy"] == policy].sort_values("mean_idle")
            colour = policy_colour(policy)
            ax.errorbar(
                rows["mean_idle"],
                rows["mean"],
                xerr=_whiskers(rows, "_idle"),
                yerr=_whiskers(rows, ""),
                fmt="o",
                color=colour,
                capsize=2,
                label=policy,
            )
            fixed = rows[rows["keep_alive"].str.startswith("fixed")]
            ax.plot(fixed["mean_idle"], fixed["mean"], color=colour, alpha=0.5)
            for row in rows.itertuples(index=False):
                ax.annotate(row.keep_alive, (row.mean_idle, row.mean), textcoords="offset points",
                            xytext=(5, 4), fontsize=7, color=colour)  # fmt: skip
        ax.set_title(_scale_label(scale))
        ax.set_xlabel("idle warm GPU-seconds per run (held, serving nothing)")
        ax.grid(True, alpha=0.3)
        ax.legend(title="policy", fontsize=8)
    axes[0].set_ylabel("cold-start ratio (% of placed requests)")
    seeds = cold["seeds"]
    seed_text = f"{seeds.min()}" if seeds.min() == seeds.max() else f"{seeds.min()}-{seeds.max()}"
    fig.suptitle(
        f"Keep-alive trade-off: {title}\nmean over {seed_text} seeds, "
        "whiskers: bootstrap 95% CI over seeds",
        fontsize=9,
    )
    return fig


def _whiskers(rows: pd.DataFrame, suffix: str) -> np.ndarray | None:
    """Error-bar lengths below and above each mean (none with one seed: NaN bounds)."""
    low, mean, high = (rows[f"{key}{suffix}"].to_numpy() for key in ("low", "mean", "high"))
    if np.isnan(low).all():
        return None
    return np.nan_to_num(np.vstack([mean - low, high - mean]))
