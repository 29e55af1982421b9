"""A start from the remote store beside a load from SSD, by the replay's own engines.

    python benchmarks/download_beside_load.py [--dir /var/tmp] [--rounds 5] [--small] [--json]

A start from the remote store downloads the checkpoint into its server's SSD directory,
then loads that copy (`calibration.validate.instance_process`); the simulator runs the
two as flows over the network link, the host's disk and cores. This benchmark times the
pieces alone and in company, on the `tiers` scenario's checkpoints (with `--small`, the
decoders' own) written in a temporary directory under `--dir`, the store
(`calibration.remote`) serving at the scenario's rate on loopback. Each round times, in
this order:

- `download alone`: an engine on server 0 told to start `small` from the store: its
  download, then its load of the downloaded copy;
- `load alone`: an engine on server 1 loading `medium` cold from its SSD;
- `both`: the two engines told at once (`reprobe.timed_loads`: each started and held,
  then a line to each);
- `load beside a deletion`: the engine on server 1 loading `medium` while a synced copy
  of `small` on the same disk is deleted, as an eviction from an SSD cache deletes one
  (`deletion_s`: the deletion's own seconds), which on a file system that discards
  freed blocks at once waits on the disk (`calibration.measure.delete_probe`).

It prints, per kind, the medians of the download's seconds, the seconds of the load
after it, the SSD load's seconds and the deletion's; then each one's time beside the
download (`both`) over its time alone, and the load's beside the deletion over alone.
It also says whether this machine reports freed memory to its host
(`calibration.measure.page_reporting`): on a VM that does, a load into fresh memory pays
for the host backing it again, by an amount that hangs on what was freed before, and the
load after a download beside another load is where this shows (docs/calibration.md,
"The tiers scenario"). Reads are cold in the guest (posix_fadvise and mincore), which a
virtual disk's host cache may not be. The kinds take turns within each round, and the
figures are medians over rounds: a benchmark, which prints figures and never fails on
time.
"""

import json
import shutil
import statistics
import sys
import threading
import time
from pathlib import Path

from engine_rounds import command_line

from calibration.checkpoint.format import BLOB_NAME, payload_bytes
from calibration.checkpoint.pagecache import make_cold
from calibration.measure.page_reporting import free_page_reporting
from calibration.remote.running import running_store
from calibration.validate.reprobe import Load, timed_loads
from calibration.validate.scenario import (
    TIERS_QUICK,
    Layout,
    Scenario,
    workspace,
    write_checkpoints,
)
from thaw_kernel.command_line import run as run_cli

DOWNLOADED, LOADED = "small", "medium"  # from the store onto server 0; from server 1's SSD
# `--small`: the decoders' own checkpoints, placed and served as the `tiers` places them.
SMALL = Scenario(requests=1, rate=1.0, ssd_copies=1, remote_rate=TIERS_QUICK.remote_rate)
KINDS = ("download alone", "load alone", "both", "load beside a deletion")
FIGURES = ("download_s", "load_after_download_s", "load_s", "deletion_s")
WIDTHS = (10, 12, 8, 10)

Rounds = dict[str, list[dict[str, float | None]]]  # per kind, each round's (None: none)


def main(argv: list[str] | None = None) -> int:
    args, scenario = command_line("download_beside_load.py", __doc__, argv, SMALL)
    with workspace(args.dir, "download-beside-") as layout:
        write_checkpoints(scenario, layout)
        sizes = {name: payload_bytes(layout.store / name) for name in (DOWNLOADED, LOADED)}
        with running_store(layout.store, scenario.remote_rate) as store:
            rounds = _measure(scenario, layout, store.url, args.rounds)
    results = _summary(rounds, sizes)
    print(json.dumps(results, indent=2) if args.json else _table(results))
    return 0


def _measure(scenario: Scenario, layout: Layout, url: str, rounds: int) -> Rounds:
    """`rounds` rounds of every kind, in turn."""
    fetched = {"url": url, "server": 0, "name": DOWNLOADED}
    download = (0, layout.work / "downloaded" / DOWNLOADED)
    load = (1, layout.ssd(1, LOADED))
    samples: Rounds = {kind: [] for kind in KINDS}
    for _ in range(rounds):
        for kind, held, downloads in (
            ("download alone", [download], [fetched]),
            ("load alone", [load], []),
            ("both", [download, load], [fetched]),
        ):
            try:
                loads = timed_loads(scenario, layout, held, downloads)
            finally:
                shutil.rmtree(download[1].parent, ignore_errors=True)
            samples[kind].append(_figures(loads, bool(downloads)))
        samples["load beside a deletion"].append(_beside_deletion(scenario, layout, load))
    return samples


def _beside_deletion(scenario: Scenario, layout: Layout, load: tuple[int, Path]) -> dict:
    """The load of `load` while a synced copy of the downloaded checkpoint is deleted."""
    victim = layout.work / "victim"
    shutil.copytree(layout.store / DOWNLOADED, victim)
    make_cold(str(victim / BLOB_NAME))  # synced first: the deletion's own time, no write-back
    took: list[float] = []

    def delete() -> None:
        began = time.monotonic()
        shutil.rmtree(victim)
        took.append(time.monotonic() - began)

    deleting = threading.Thread(target=delete)
    try:
        (loaded,) = timed_loads(scenario, layout, [load], beside=deleting.start)
    finally:
        if deleting.ident is not None:  # begun
            deleting.join()
        shutil.rmtree(victim, ignore_errors=True)
    return _figures([loaded], False) | {"deletion_s": took[0]}


def _figures(loads: list[Load], downloaded: bool) -> dict[str, float | None]:
    """One kind's figures in one round: the download's and the load after it (the first
    load, where there was a download), the SSD load's (the last, where there was one)."""
    figures: dict[str, float | None] = dict.fromkeys(FIGURES)
    if downloaded:
        figures["download_s"] = loads[0].download_s
        figures["load_after_download_s"] = loads[0].load_s
    if not downloaded or len(loads) > 1:
        figures["load_s"] = loads[-1].load_s
    return figures


def _summary(rounds: Rounds, sizes: dict[str, int]) -> dict:
    """Each kind's medians, and each figure in company over alone; the page reporting."""
    kinds = {
        kind: {figure: _median([r[figure] for r in samples]) for figure in FIGURES}
        | {"rounds": samples}
        for kind, samples in rounds.items()
    }
    alone = {
        "download_s": kinds["download alone"],
        "load_after_download_s": kinds["download alone"],
        "load_s": kinds["load alone"],
    }
    beside = kinds["load beside a deletion"]["load_s"]
    reporting = free_page_reporting()
    return {
        "rounds": len(rounds["both"]),
        "bytes": sizes,
        "free_page_reporting_order": None if reporting is None else reporting.order,
        "kinds": kinds,
        "both_over_alone": {f: kinds["both"][f] / alone[f][f] for f in alone},
        "deletion_over_alone": beside / kinds["load alone"]["load_s"],
    }


def _median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def _table(results: dict) -> str:
    sizes = ", ".join(f"{name} {size / 1e9:.3g} GB" for name, size in results["bytes"].items())
    order = results["free_page_reporting_order"]
    lines = [
        f"{DOWNLOADED} from the store onto server 0, {LOADED} from server 1's SSD ({sizes}); "
        f"medians of {results['rounds']} round(s)",
        "free page reporting: "
        + ("off (or no balloon reports)" if order is None else f"on, order {order}"),
        f"{'kind':<23} {'download s':>10} {'load after s':>12} {'load s':>8} {'delete s':>10}",
    ]
    for kind, row in results["kinds"].items():
        cells = [_cell(row[f], width) for f, width in zip(FIGURES, WIDTHS, strict=True)]
        lines.append(f"{kind:<23} " + " ".join(cells))
    ratios = results["both_over_alone"]
    cells = [_cell(ratios.get(f), width) for f, width in zip(FIGURES, WIDTHS, strict=True)]
    lines.append(f"{'both / alone':<23} " + " ".join(cells))
    lines.append(f"load beside a deletion / alone: {results['deletion_over_alone']:.2f}")
    return "\n".join(lines)


def _cell(value: float | None, width: int) -> str:
    return f"{'-':>{width}}" if value is None else f"{value:{width}.2f}"


if __name__ == "__main__":
    sys.exit(run_cli("download_beside_load.py", main))
