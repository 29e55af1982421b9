"""calibration.validate --scenario tiers, end to end on small checkpoints: a real remote
store on loopback, downloads into the servers' SSD directories, SSD and DRAM caches of a
fixed size, and the simulator's side with the same tiers. Error targets are reported by
the command (docs/calibration.md), never asserted here."""

import json
import math
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from calibration.checkpoint.format import BLOB_NAME
from calibration.measure.page_reporting import free_page_reporting
from calibration.remote.running import running_store
from calibration.validate import command, scheduler
from calibration.validate.loads import TIERS
from calibration.validate.scenario import (
    OVER_ASKED,
    Layout,
    Scenario,
    share_store_pages,
    write_checkpoints,
)
from calibration.validate.scheduler import instance_command, instance_spec
from tests.validate_support import DERIVED

MB = 10**6
# The tiers scenario in miniature: checkpoints of 60, 90 and 160 MB (the decoders' 39,
# 64 and 130 MB and ballast), one SSD copy each (server 0: the first and third, server 1
# the second), SSDs too small for all three, a DRAM cache holding one or two.
TINY = Scenario(
    requests=16,
    rate=1.0,
    servers=2,
    name="tiers",
    checkpoint_bytes=(60 * MB, 90 * MB, 160 * MB),
    ssd_copies=1,
    ssd_bytes=250 * MB,
    remote_rate=100e6,
    dram_bytes=170 * MB,
    tokens="lognormal:16,0.5,8,0.5",
    store=True,
)


@pytest.mark.slow
def test_tiers_replays_over_dram_ssd_and_the_remote_store(monkeypatch, tmp_path):
    """With a checkpoint store per server; `tiers-serial`'s engines load as the `startup`
    scenario's do, and download as `test_an_instance_downloads_...` does."""
    scenario = TINY
    monkeypatch.setitem(command.SCENARIOS, scenario.name, (scenario, scenario))
    shared = []  # per copy a DRAM cache kept: whether it then held the store's pages

    def sharing(layout: Layout, server: int, model: str) -> None:
        share_store_pages(layout, server, model)
        blob, store = layout.dram_copy(server, model) / BLOB_NAME, layout.store / model
        shared.append(blob.stat().st_ino == (store / BLOB_NAME).stat().st_ino)

    monkeypatch.setattr(scheduler, "share_store_pages", sharing)
    profile = tmp_path / "profile.json"
    derived = DERIVED | {"network_bytes_per_s": 100e6}
    profile.write_text(
        json.dumps({"version": 1, "machine": {"description": "by hand"}, "derived": derived})
    )
    out = tmp_path / "out"
    flags = {"--scenario": scenario.name, "--profile": str(profile), "--dir": str(tmp_path)}
    flags |= {"--policies": "random,startup-aware", "--out": str(out)}
    shm_before = set(Path("/dev/shm").glob("thaw-validate-*"))
    args = command._parser().parse_args(["--quick", *(x for kv in flags.items() for x in kv)])
    report = command.run(args)
    assert shared and all(shared)  # every replay's caches start empty and admit a copy
    assert report["scenario"]["name"] == scenario.name and report["scenario"]["repeats"] == 1
    assert report["scenario"]["store"] is scenario.store
    reporting = free_page_reporting()  # the machine's, recorded beside the figures
    assert report["free_page_reporting_order"] == (reporting and reporting.order)
    phases = report["phases_s"]  # each phase's wall seconds (setup and analysis aside)
    assert list(phases) == ["profile", "checkpoints", "speeds and first probe", "replays"]
    assert min(phases.values()) >= 0 and sum(phases.values()) <= report["wall_s"]
    footprint = report["machine_footprint"]  # the store and the caches held memory
    assert footprint["memory_in_use_peak_bytes"] >= footprint["memory_in_use_start_bytes"] > 0
    assert footprint["disk_used_peak_bytes"] >= footprint["disk_used_start_bytes"] > 0
    sizes = report["scenario"]["model_bytes"].values()
    for size, asked in zip(sizes, (60 * MB, 90 * MB, 160 * MB), strict=True):
        assert 0 <= size - asked < OVER_ASKED  # and each tensor aligned to 4 KiB
    for name in ("random", "startup-aware"):
        result = report["policies"][name]
        for side in ("real", "sim"):
            loads = result[f"loads_by_tier_{side}"]
            assert set(loads) == set(TIERS)
            # The DRAM caches start empty: the first cold start reads SSD or the store.
            assert loads["ssd"]["loads"] + loads["remote"]["loads"] >= 1
            for tier in ("ssd", "remote"):
                if loads[tier]["loads"]:
                    assert loads[tier]["median_s"] > 0
            if loads["dram"]["loads"]:  # with stores, a start from DRAM reads nothing
                assert loads["dram"]["median_s"] == 0
        real_instances = result["runs"][0]["real"]["instances"]
        assert sum(v["loads"] for v in result["loads_by_tier_real"].values()) == real_instances
        beside = result["runs"][0]["runtime_start_beside"]
        assert sum(v["real_n"] for v in beside.values()) == real_instances
        loaded_sim = sum(v["loads"] for v in result["loads_by_tier_sim"].values())
        # Loading beside the start-up, the simulator's log still times every runtime.
        assert sum(v["sim_n"] for v in beside.values()) == loaded_sim > 0
        paired = result["runs"][0]["paired_stages"]
        assert paired["instances"] == real_instances
        assert paired["runtime"]["all"]["n"] <= paired["pairs"] <= real_instances
        for stage in ("runtime", "download", "disk load"):
            counts = {label: figures["n"] for label, figures in paired[stage].items()}
            assert sum(counts.values()) == 2 * counts["all"]  # the companies part "all"
        assert 0 < result["load_share_real"] < 1 and 0 < result["load_share_sim"] < 1
        # Every request with a TTFT, on the tier that served it.
        served = {side: result[f"requests_by_tier_{side}"] for side in ("real", "sim")}
        assert (
            sum(v["requests"] for v in served["real"].values()) == result["runs"][0]["real_ttfts"]
        )
        assert sum(v["requests"] for v in served["sim"].values()) == report["scenario"]["requests"]
        for q in (50, 90, 99):
            assert math.isfinite(result[f"ttft_p{q}_rel_error"])
    for side in ("real", "sim"):
        assert report[f"p99_ratio_random_to_startup_aware_{side}"] > 0
    written = json.loads((out / "report.json").read_text())
    assert (
        written["policies"]["random"]["loads_by_tier_sim"]
        == (report["policies"]["random"]["loads_by_tier_sim"])
    )
    # The disk read alone and in pairs, and a load's CPU, around the replay (a version-1
    # profile keeps them as measurements only).
    kept = json.loads((out / "seed-0" / "random-profile.json").read_text())["measurements"]
    for name in ("disk_read_around_replay", "disk_pair_read_around_replay"):
        assert kept[name]["n"] == 6 and kept[name]["min"] > 0
    assert kept["load_cpu_around_replay"]["unit"] == "s/byte"
    assert 0 < kept["load_cpu_around_replay"]["median"] < 1e-6  # under 1,000 s a GB
    cluster = (out / "cluster.toml").read_text()
    assert "remote_download = true" in cluster and "compute_bytes" in cluster
    assert "load_beside_startup = true" in cluster
    # A store's read begins as its instance spawns, before the runtime has started, and
    # the instance maps the copy once both are done.
    instances = pd.read_csv(out / "seed-0" / "random-instances.csv")
    stored = instances.dropna(subset=["stored"])
    assert len(stored) and (stored["load_began"] < stored["started"]).all()
    assert (stored["loaded"] >= stored[["stored", "started"]].max(axis=1)).all()
    # Nothing is left behind: the SSDs on --dir, the DRAM caches and the store on /dev/shm.
    assert not list(tmp_path.glob("thaw-validate-*"))
    assert set(Path("/dev/shm").glob("thaw-validate-*")) == shm_before


def test_an_instance_downloads_from_the_store_then_loads_drops_the_ballast_and_serves(tmp_path):
    layout = Layout(tmp_path / "disk", tmp_path / "shm")
    sizes = write_checkpoints(TINY, layout)
    assert not layout.ssd(1, "large").exists()  # on server 0's SSD and in the store only
    (layout.dram / "dram1").mkdir(parents=True)
    with running_store(layout.store, TINY.remote_rate) as running:
        download = {"url": running.url, "server": 1, "name": "large"}
        spec = instance_spec(
            TINY, 1, "large", layout.ssd(1, "large"), layout.dram_copy(1, "large"), download
        )
        with subprocess.Popen(
            instance_command(spec), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        ) as child:
            assert child.stdin is not None and child.stdout is not None
            child.stdin.write(json.dumps({"admit": 1, "input": 8, "output": 3}) + "\n")
            child.stdin.flush()
            events = [json.loads(child.stdout.readline()) for _ in range(8)]
            child.stdin.close()
            assert child.wait(timeout=60) == 0
    names = [event["event"] for event in events]
    assert names[:4] == ["started", "downloaded", "read", "loaded"]
    assert names[4:] == ["installed", "ready", "first", "done"]
    assert events[1]["bytes"] > sizes["large"]  # the blob and its index
    # Every byte, ballast included, on the server's SSD and in its DRAM cache.
    stored = (layout.store / "large" / BLOB_NAME).read_bytes()
    assert (layout.ssd(1, "large") / BLOB_NAME).read_bytes() == stored
    assert (layout.dram_copy(1, "large") / BLOB_NAME).read_bytes() == stored
    # The size asked for, and the alignment of each tensor to 4 KiB.
    assert len(stored) == sizes["large"] and 0 <= len(stored) - 160 * MB < MB
