"""calibration.validate: the scheduler's books as a policy sees them, bad input, and the
real replay end to end (small: `--quick`, one policy). Speeds and error targets are
reported by the command, never asserted here."""

import json
import math
import re
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from calibration.checkpoint.format import BLOB_NAME
from calibration.migration.model import Transformer, save_model
from calibration.validate.command import DEFAULT_POLICIES, POLICIES, _policies, main
from calibration.validate.compare import instance_phases
from calibration.validate.records import InstanceRecord, Records
from calibration.validate.reprobe import Probe, reprobed
from calibration.validate.scenario import MODELS, QUICK
from calibration.validate.stages import STAGES, real_stages, sim_stages
from calibration.validate.summary import pooled, replay_spread, summarize
from calibration.validate.view import Books
from policies import get_policy
from policies.base import Request, Start, Wait
from sim.config.profile import read_profile
from sim.spec import ClusterConfig
from tests.refusal import refused
from tests.validate_support import DERIVED, MB, books, cluster_config, write_profile
from thaw_kernel.errors import InputError


@pytest.fixture
def profile(tmp_path: Path) -> Path:
    return write_profile(tmp_path / "profile.json")


@pytest.fixture(scope="module")
def config(tmp_path_factory) -> ClusterConfig:
    return cluster_config(tmp_path_factory.mktemp("cluster"))


def request(model: str = "a") -> Request:
    return Request(0, model, 0.0, 16, 8)


def place(policy: str, book: Books, seed: int = 0) -> Start | Wait:
    return get_policy(policy)(np.random.default_rng(seed)).place(request(), book)


def take_gpu(book: Books, server: int) -> None:
    book.free[server] -= 1
    book.reindex(server)


def test_locality_starts_where_dram_holds_the_checkpoint(config):
    book, _ = books(config)
    book.dram[2].admit("a", 40 * MB)
    assert place("locality", book) == Start(2)


def test_locality_takes_the_next_tier_when_the_dram_holder_is_busy(config):
    book, _ = books(config)
    book.dram[2].admit("a", 40 * MB)
    take_gpu(book, 2)
    assert place("locality", book) == Start(0)


def test_an_idle_instance_gpu_counts_as_available(config):
    book, _ = books(config, servers=1)
    take_gpu(book, 0)
    assert isinstance(place("locality", book), Wait)
    book.idle_gpus[0] += 1
    book.reindex(0)
    assert place("locality", book) == Start(0)


def test_random_draws_only_among_servers_with_a_free_gpu(config):
    book, _ = books(config)
    take_gpu(book, 1)
    chosen = {place("random", book, seed).server for seed in range(40)}
    assert chosen == {0, 2}


def documented_policies() -> tuple[list[str], list[str], str]:
    """docs/calibration.md's `--policies` row: the policies it accepts, those it says are
    refused (in parentheses), and its default cell."""
    text = (Path(__file__).parents[2] / "docs" / "calibration.md").read_text()
    row = next(line for line in text.splitlines() if line.startswith("| `--policies` |"))
    _, meaning, default = row.strip("| ").split(" | ")
    accepted, _, refused = meaning.partition("(")
    return re.findall(r"`([a-z-]+)`", accepted), re.findall(r"`([a-z-]+)`", refused), default


def test_the_replay_takes_the_policies_the_docs_name():
    accepted, refused, default = documented_policies()
    assert accepted and refused and default == "the first three"
    assert list(POLICIES) == accepted and list(DEFAULT_POLICIES) == accepted[:3]
    assert _policies(",".join(accepted)) == accepted
    for name in refused:
        with pytest.raises(InputError, match=name):
            _policies(name)


def test_no_free_gpu_means_wait(config):
    book, _ = books(config, servers=2)
    take_gpu(book, 0)
    take_gpu(book, 1)
    for policy in POLICIES:  # none of them finds a GPU, nor an instance to move
        assert isinstance(place(policy, book), Wait), policy


def test_startup_aware_estimates_from_the_profile_bandwidths(config):
    book, _ = books(config, servers=2)
    book.dram[1].admit("a", 40 * MB)
    decision = place("startup-aware", book)
    assert decision.server == 1
    assert decision.estimate_s == pytest.approx(2.3 + 40 * MB / 2.5e9)
    take_gpu(book, 1)
    assert place("startup-aware", book).estimate_s == pytest.approx(2.3 + 40 * MB / 1.0e9)


def test_the_books_price_the_measured_engine_s_steps_each_alone(tmp_path):
    # A version-2 profile: a start-up of 2.3 s of which 1.5 CPU-seconds, 1.5 cores, a
    # warm-up of 0.1 s, and loads from SSD taking 2 CPU-seconds a GB.
    derived = DERIVED | {"startup_cpu_s": 1.5, "host_cores": 1.5, "warmup_s": 0.1}
    derived |= {"load_cpu_s_per_byte": 2e-9}
    document = {"version": 2, "machine": {"description": "by hand"}, "derived": derived}
    (tmp_path / "profile.json").write_text(json.dumps(document))
    book, _ = books(cluster_config(tmp_path, profile=tmp_path / "profile.json"), servers=2)
    assert [[stage.name for stage in step] for step in book.steps("b")] == [
        ["startup"],
        ["startup-cpu"],
        ["load"],
        ["warmup"],
    ]
    assert book.cpu_s(0, (1.5,), 0.0) == 1.5  # one core of the 1.5
    assert book.cpu_s(0, (1.5, 1.5), 0.0) == pytest.approx(2.0)  # 0.75 core each
    # b's 60 MB from SSD: its bytes take 0.06 s at 1 GB/s, its 0.12 CPU-seconds 0.08 s
    # on the 1.5 cores.
    assert book.load_s(0, "b", 0.0) == pytest.approx(0.08)
    decision = get_policy("startup-aware")(np.random.default_rng(0)).place(request("b"), book)
    assert decision.estimate_s == pytest.approx(0.8 + 1.5 + 0.08 + 0.1)


def test_the_dram_cache_evicts_least_recently_used_and_reports_it(config):
    book, evicted = books(config, servers=1, dram_bytes=90 * MB)
    book.dram[0].admit("a", 40 * MB)
    book.dram[0].admit("b", 60 * MB)
    assert evicted == [("dram", 0, "a")]
    assert list(book.holders("a", "dram")) == []
    assert list(book.holders("a", "ssd")) == [0]


def test_a_checkpoint_on_no_ssd_of_the_server_comes_from_the_remote_store(config):
    book, _ = books(config, servers=1, remote=True, placement={"a": [0], "b": []})
    assert book.fastest_tier(0, "a") == "ssd"
    assert book.fastest_tier(0, "b") == "remote"
    assert list(book.holders("b", "ssd")) == []
    group = config.servers[0]
    # Downloaded over the network link, then read from SSD at its bandwidth.
    expected = 60 * MB / group.network + 60 * MB / min(group.ssd_read, group.pcie)
    assert book.load_s(0, "b", 0.0) == pytest.approx(expected)


def test_the_ssd_cache_evicts_least_recently_used_and_reports_it(config):
    placement = {"a": [0], "b": []}
    book, evicted = books(config, servers=1, placement=placement, ssd_bytes=70 * MB)
    assert list(book.holders("a", "ssd")) == [0]
    book.ssd[0].pin("a")  # being read: stays
    assert not book.ssd[0].admit("b", 60 * MB) and evicted == []
    book.ssd[0].unpin("a")
    assert book.ssd[0].admit("b", 60 * MB)  # a download, room made by evicting "a"
    assert evicted == [("ssd", 0, "a")]
    assert list(book.holders("a", "ssd")) == [] and list(book.holders("b", "ssd")) == [0]


def test_instance_phases_tell_overlapping_start_ups_apart():
    records = Records(0)
    records.instances = [
        InstanceRecord("a", 0, "ssd", 0.0, 2.0, 2.5, 2.75),
        InstanceRecord("b", 1, "ssd", 1.0, 4.0, 4.25, 4.5),
        InstanceRecord("a", 0, "dram", 10.0, 12.0, 12.25, 12.5),
    ]
    phases = instance_phases(records)
    assert phases["overlapping_starts"] == 2
    assert phases["process_start_s_median_alone"] == 2.0
    assert phases["process_start_s_median_overlapping"] == 2.5
    assert phases["load_s_median"] == 0.25


def validate(*args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "calibration.validate", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--profile", "/no/such/profile.json"], "/no/such/profile.json"),
        (["--policies", "nonsense"], "nonsense"),
        (["--policies", "preemption"], "preemption"),
        (["--seed", "x"], "--seed"),
        (["--seed=-1"], "--seed"),
        (["--dir", "/no/such/dir"], "/no/such/dir"),
        (["--out", "/"], "--out"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, monkeypatch, tmp_path, args, named):
    monkeypatch.chdir(tmp_path)
    refused(capsys, main, ["--quick", *args], named, keeps=tmp_path)


def test_a_bad_profile_names_the_file(capsys, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": 1}')
    argv = ["--quick", "--profile", str(bad), "--dir", str(tmp_path)]
    refused(capsys, main, argv, str(bad), keeps=tmp_path)


def test_real_stages_are_the_instances_medians():
    records = Records(2)
    records.instances = [
        InstanceRecord("a", 0, "ssd", 0.0, 2.0, 2.5, 2.75),
        InstanceRecord("b", 1, "dram", 1.0, 4.0, 4.25, 4.5),
    ]
    requests = pd.DataFrame({"startup_s": [2.75, 0.0], "prefill_s": [0.1, 0.9]})
    stages = real_stages(records, requests)
    assert list(stages) == list(STAGES)
    assert stages["runtime_start"] == 2.5
    assert stages["checkpoint_load"] == 0.375
    assert stages["warmup"] == 0.25
    assert stages["first_prefill"] == 0.1  # the cold request's; the warm one is left out
    assert math.isnan(stages["checkpoint_copy"])  # no store: the engines load themselves


def test_with_stores_a_real_start_loads_beside_its_runtime_then_copies():
    records = Records(2)
    # From SSD: the store reads 0.1-1.5 s, the runtime starts 0-1.0 s, the engine's copy
    # runs 1.5-1.75 s. From DRAM: nothing to read; the copy runs from the start, 1.0-1.2.
    records.instances = [
        InstanceRecord("a", 0, "ssd", 0.0, 1.0, 1.75, 1.8, load_began=0.1, stored=1.5),
        InstanceRecord("b", 1, "dram", 0.0, 1.0, 1.2, 1.25),
    ]
    for record in records.instances:
        record.copies = True
    rows = records.instances_frame()
    assert list(rows["load_ended"] - rows["load_began"]) == pytest.approx([1.4, 0.0])
    assert list(rows["loaded"] - rows["copy_began"]) == pytest.approx([0.25, 0.2])
    requests = pd.DataFrame({"startup_s": [1.8, 1.25], "prefill_s": [0.1, 0.1]})
    stages = real_stages(records, requests)
    assert stages["checkpoint_load"] == pytest.approx(0.7)
    assert stages["checkpoint_copy"] == pytest.approx(0.225)


@pytest.mark.parametrize("store", [False, True])
def test_simulated_stages_split_the_start_up_into_runtime_load_and_warm_up(tmp_path, store):
    instances = pd.DataFrame(
        {"model": ["a"], "tier": ["ssd"], "allocated_s": [1.0], "ready_s": [3.5]}
    )
    instances["load_s"] = 0.04  # as the simulator ran it: 40 MB at the SSD's 1 GB/s
    # Its runtime as the log has it: before the load, or beside it, ended earlier.
    instances["runtime_s"] = 1.2 if store else 2.5 - 0.04 - 0.1
    requests = pd.DataFrame({"startup_s": [2.5, 0.0], "prefill_s": [0.03, 0.02]})
    derived = DERIVED | {"warmup_s": 0.1}
    config = cluster_config(tmp_path, scenario=replace(QUICK, store=store))
    stages = sim_stages(requests, instances, derived, config)
    assert list(stages) == list(STAGES)
    assert stages["checkpoint_load"] == 0.04
    assert stages["warmup"] == 0.1
    assert stages["first_prefill"] == 0.03
    if store:  # the runtime beside the load; then the copy of 40 MB at 2.5 GB/s
        assert stages["runtime_start"] == 1.2
        assert stages["checkpoint_copy"] == pytest.approx(0.016)
    else:
        assert stages["runtime_start"] == pytest.approx(2.5 - 0.04 - 0.1)
        assert math.isnan(stages["checkpoint_copy"])


def test_summary_takes_the_median_over_repeats_and_the_range():
    def run(error: float) -> dict:
        out = {"seed": round(100 * error), "replay": 0}  # three traces, each replayed once
        out |= {"stages": {s: {"real_s": 1.0 + error, "sim_s": 1.0} for s in STAGES}}
        out |= {"real": {"migrated_requests": 2}, "sim": {"migrated_requests": 1}}
        for q in (50, 90, 99):
            out |= {f"ttft_p{q}_real_s": 2.0, f"ttft_p{q}_sim_s": 2.0 * (1 + error)}
            out[f"ttft_p{q}_rel_error"] = error
            out[f"ttft_p{q}_rank_error"] = error / 10
            out[f"ttft_p{q}_sensitivity"] = 0.1 + error
        out["with_profile_startup"] = {"ttft_p99_rel_error": 2 * error}
        # From DRAM with stores: nothing to read, every load 0 s.
        tiers = {"dram": (1, 0.0), "ssd": (2, 1.0 + error), "remote": (0, None)}
        for side in ("real", "sim"):
            out[f"loads_by_tier_{side}"] = {
                tier: {"loads": n, "median_s": s} for tier, (n, s) in tiers.items()
            }
        served = {
            "warm": (1, 0.01),
            "dram": (0, None),
            "ssd": (2, 2.0 + error),
            "remote": (0, None),
        }
        for side in ("real", "sim"):
            out[f"requests_by_tier_{side}"] = {
                tier: {"requests": n, "ttft_median_s": s} for tier, (n, s) in served.items()
            }
        out["load_share_real"] = 0.5 + error
        out["load_share_sim"] = 0.6 + error
        alone = {"real_n": 2, "real_s": 1.0 + error, "sim_n": 1, "sim_s": 1.0}
        out["runtime_start_beside"] = {"alone": alone}
        pair = {"n": 1, "real_s": 1.0 + error, "sim_s": 1.0, "ratio": 1.0 + error}
        out["paired_stages"] = {"pairs": 1, "instances": 2} | {
            stage: {"all": pair} for stage in ("runtime", "download", "disk load")
        }
        return out

    summary = summarize([run(-0.2), run(0.1), run(0.05)])
    assert summary["repeats"] == 3
    assert summary["ttft_p99_rel_error"] == 0.05
    assert summary["ttft_p99_rel_error_range"] == [-0.2, 0.1]
    assert summary["ttft_p99_abs_rel_error"] == 0.1  # the median of 0.2, 0.1 and 0.05
    assert summary["ttft_p50_rank_error"] == pytest.approx(0.005)
    assert summary["ttft_p50_abs_rank_error"] == pytest.approx(0.01)
    assert summary["ttft_p90_sensitivity"] == pytest.approx(0.15)
    assert summary["ttft_p50_sim_s"] == pytest.approx(2.1)
    assert summary["stages"]["checkpoint_load"]["real_s"] == 1.05
    assert summary["migrated_requests"] == {"real": 6, "sim": 3}
    loads = summary["loads_by_tier_real"]
    assert loads["ssd"] == {"loads": 6, "median_s": 1.05}  # summed; median of the medians
    assert loads["remote"] == {"loads": 0, "median_s": None}
    assert loads["dram"] == {"loads": 3, "median_s": 0.0}  # a zero is a median, not none
    assert summary["load_share_real"] == 0.55
    assert summary["load_share_sim"] == pytest.approx(0.65)
    served = summary["requests_by_tier_sim"]
    assert served["ssd"] == {"requests": 6, "ttft_median_s": 2.05}
    assert served["dram"] == {"requests": 0, "ttft_median_s": None}
    assert summary["runtime_start_beside"]["alone"] == {
        "real_n": 6, "real_s": 1.05, "sim_n": 3, "sim_s": 1.0,
    }  # fmt: skip
    assert summary["paired_stages"]["pairs"] == 3
    assert summary["paired_stages"]["runtime"]["all"]["ratio"] == 1.05
    assert summary["with_profile_startup"] == {"ttft_p99_rel_error": 0.1}
    assert summary["ttft_p50_replay_spread"] is None  # no trace replayed twice


def test_the_replay_spread_is_how_far_later_replays_of_a_trace_part_from_its_first():
    def run(seed: int, replay: int, p50: float) -> dict:
        return {"seed": seed, "replay": replay} | {
            f"ttft_p{q}_real_s": p50 * q / 50 for q in (50, 90, 99)
        }

    # Seed 0's replays 1 and 2 part from its first by +20% and -10%, seed 1's by +5%; a
    # seed replayed once adds nothing. The median of 0.2, 0.1 and 0.05 is 0.1.
    runs = [run(0, 0, 10.0), run(0, 1, 12.0), run(0, 2, 9.0), run(1, 0, 4.0)]
    runs += [run(1, 1, 4.2), run(2, 0, 7.0)]
    spread = replay_spread(runs)
    for q in (50, 90, 99):
        assert spread[f"ttft_p{q}_replay_spread"] == pytest.approx(0.1)


def test_pooled_percentiles_are_taken_over_every_repeat_s_requests():
    # Two repeats of two requests each: alone, each repeat's median is 1.5 real against
    # 3.5 (+133%) and 5.5 (+267%) simulated; pooled, the four requests' medians are 1.5
    # and 4.5 (+200%).
    real = [np.array([1.0, 2.0]), np.array([3.0, 0.0])]
    simulated = [np.array([3.0, 4.0]), np.array([5.0, 6.0])]
    figures = pooled(real, simulated)
    assert (figures["ttft_p50_real_s"], figures["ttft_p50_sim_s"]) == (1.5, 4.5)
    assert figures["ttft_p50_rel_error"] == pytest.approx(2.0)


def test_a_reprobed_profile_takes_the_probes_median_start_up(profile, tmp_path):
    before = Probe((2.0, 2.2, 2.4), (1.9, 2.0, 2.1))
    after = Probe((2.6, 2.8, 3.0), (2.5, 2.6, 2.7))
    document = json.loads(profile.read_text())
    document["version"] = 2
    document["derived"] |= {"startup_cpu_s": 2.0, "host_cores": 2}
    profile.write_text(json.dumps(document))
    out = reprobed(profile, before, after, tmp_path / "seed-0" / "random-profile.json")
    derived, _ = read_profile(out)
    assert derived["instance_startup_s"] == pytest.approx(2.5)  # median of all six
    assert derived["startup_cpu_s"] == pytest.approx(2.3)
    assert derived["host_cores"] == 2  # the rest as the profile has it
    assert derived["decode_step_s"] == DERIVED["decode_step_s"]
    record = json.loads(out.read_text())["measurements"]["instance_startup_around_replay"]
    assert (record["n"], record["min"], record["max"]) == (6, 2.0, 3.0)


def disk_profile(tmp_path: Path) -> Path:
    """A version-2 profile whose disk reads 2 GB/s for one reader, 2.5 for several."""
    profile = tmp_path / "profile.json"
    document = {"version": 2, "machine": {"description": "by hand"}}
    document["derived"] = DERIVED | {"startup_cpu_s": 1.0, "host_cores": 1}
    document["derived"] |= {"ssd_read_bytes_per_s": 2e9, "host_disk_bytes_per_s": 2.5e9}
    profile.write_text(json.dumps(document))
    return profile


def test_a_reprobed_disk_sets_the_read_rate_and_scales_the_host_disk_alike(tmp_path):
    profile = disk_profile(tmp_path)
    before = Probe((1.0,), (1.0,), (1.4e9, 1.5e9, 1.6e9))
    after = Probe((1.0,), (1.0,), (1.5e9, 1.6e9, 1.7e9))
    out = reprobed(profile, before, after, tmp_path / "out.json")
    derived, _ = read_profile(out)
    assert derived["ssd_read_bytes_per_s"] == pytest.approx(1.55e9)  # median of all six
    assert derived["host_disk_bytes_per_s"] == pytest.approx(2.5e9 * 1.55 / 2)
    record = json.loads(out.read_text())["measurements"]["disk_read_around_replay"]
    assert (record["n"], record["unit"]) == (6, "bytes/s")
    # Probes without reads (the start-up scenario) leave the disk as profiled.
    alone = Probe((1.0,), (1.0,))
    derived, _ = read_profile(reprobed(profile, alone, alone, tmp_path / "same.json"))
    assert derived["ssd_read_bytes_per_s"] == 2e9


def test_reprobed_pairs_set_the_disk_s_shared_rate_and_one_reader_s_alone(tmp_path):
    profile = disk_profile(tmp_path)
    before = Probe((1.0,), (1.0,), (1.4e9, 1.5e9, 1.6e9), (1.1e9, 1.2e9, 1.3e9))
    after = Probe((1.0,), (1.0,), (1.5e9, 1.6e9, 1.7e9), (1.2e9, 1.3e9, 1.4e9))
    out = reprobed(profile, before, after, tmp_path / "out.json")
    derived, _ = read_profile(out)
    assert derived["ssd_read_bytes_per_s"] == pytest.approx(1.55e9)
    assert derived["host_disk_bytes_per_s"] == pytest.approx(1.55e9)  # one stream alone
    assert derived["host_disk_shared_bytes_per_s"] == pytest.approx(1.25e9)  # the pairs'
    record = json.loads(out.read_text())["measurements"]["disk_pair_read_around_replay"]
    assert (record["n"], record["min"], record["max"]) == (6, 1.1e9, 1.4e9)


def test_a_reprobed_load_s_cpu_is_the_probes_median_where_the_profile_prices_it(tmp_path):
    profile = disk_profile(tmp_path)
    before = Probe((1.0,), (1.0,), load_cpu_s_per_byte=(0.7e-9, 0.8e-9, 0.9e-9))
    after = Probe((1.0,), (1.0,), load_cpu_s_per_byte=(0.6e-9, 0.75e-9, 1.0e-9))
    derived, _ = read_profile(reprobed(profile, before, after, tmp_path / "none.json"))
    assert "load_cpu_s_per_byte" not in derived  # a profile without a load's CPU keeps none
    document = json.loads(profile.read_text())
    document["derived"]["load_cpu_s_per_byte"] = 1.0e-9
    profile.write_text(json.dumps(document))
    out = reprobed(profile, before, after, tmp_path / "out.json")
    derived, _ = read_profile(out)
    assert derived["load_cpu_s_per_byte"] == pytest.approx(0.775e-9)  # median of all six
    record = json.loads(out.read_text())["measurements"]["load_cpu_around_replay"]
    assert (record["n"], record["unit"], record["max"]) == (6, "s/byte", 1.0e-9)


def test_a_reprobed_start_up_spends_at_most_its_wall_time_on_cores(tmp_path):
    profile = tmp_path / "profile.json"
    document = {"version": 2, "machine": {"description": "by hand"}}
    document["derived"] = DERIVED | {"startup_cpu_s": 1.0, "host_cores": 1}
    profile.write_text(json.dumps(document))
    probe = Probe((1.0,), (1.5,))  # a second thread: more CPU-seconds than wall
    derived, _ = read_profile(reprobed(profile, probe, probe, tmp_path / "out.json"))
    assert derived["startup_cpu_s"] == derived["instance_startup_s"] == 1.0


def test_a_reprobed_version_1_profile_stays_version_1(profile, tmp_path):
    probe = Probe((3.0,), (2.0,))
    out = reprobed(profile, probe, probe, tmp_path / "out.json")
    derived, _ = read_profile(out)
    assert derived["instance_startup_s"] == 3.0
    assert "startup_cpu_s" not in derived


@pytest.mark.parametrize("replays", ["0", "11", "x"])
def test_bad_replays_are_refused_in_one_line(capsys, tmp_path, replays):
    refused(capsys, main, ["--quick", f"--replays={replays}", "--dir", str(tmp_path)],
            "--replays", keeps=tmp_path)  # fmt: skip


@pytest.mark.parametrize("repeats", ["0", "-3", "x", "1.5"])
def test_bad_repeats_are_refused_in_one_line(capsys, tmp_path, repeats):
    refused(capsys, main, ["--quick", f"--repeats={repeats}", "--dir", str(tmp_path)],
            "--repeats", keeps=tmp_path)  # fmt: skip


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda:0", marks=pytest.mark.cuda)])
def test_an_instance_loads_from_ssd_installs_in_dram_and_serves_on_its_device(tmp_path, device):
    ssd, dram = tmp_path / "ssd" / "small", tmp_path / "dram" / "small"
    save_model(Transformer.random(MODELS["small"], 0), ssd)
    dram.parent.mkdir()
    fields = {k: v for k, v in vars(MODELS["small"]).items() if k != "dtype"}
    spec = {"config": fields, "checkpoint": str(ssd), "install": str(dram), "max_batch": 2}
    command = [sys.executable, "-m", "calibration.validate.instance_process"]
    command.append(json.dumps(spec | {"device": device}))
    with subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as child:
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write(json.dumps({"admit": 7, "input": 5, "output": 3}) + "\n")
        child.stdin.flush()
        events = [json.loads(child.stdout.readline()) for _ in range(7)]
        child.stdin.close()  # the end of stdin stops it
        assert child.wait(timeout=60) == 0
    names = [event["event"] for event in events]
    assert names == ["started", "read", "loaded", "installed", "ready", "first", "done"]
    assert events[-1]["request"] == 7
    assert events[0]["cpu_s"] > 0  # the runtime's own CPU-seconds, beside the wall time
    assert events[1]["cpu_s"] > events[0]["cpu_s"]  # and the read's after them
    times = [event["t"] for event in events]
    assert times == sorted(times)
    assert (dram / BLOB_NAME).read_bytes() == (ssd / BLOB_NAME).read_bytes()


@pytest.mark.slow
def test_quick_replays_for_real_and_reports_every_error(profile, tmp_path):
    out = tmp_path / "out"
    args = ["--quick", "--repeats", "2", "--profile", str(profile), "--policies", "locality"]
    done = validate(*args, "--out", str(out))
    assert done.returncode == 0, done.stderr
    report = json.loads((out / "report.json").read_text())
    result = report["policies"]["locality"]
    assert report["scenario"]["repeats"] == result["repeats"] == 2
    assert [run["seed"] for run in result["runs"]] == [0, 1]
    for q in (50, 90, 99):
        errors = [run[f"ttft_p{q}_rel_error"] for run in result["runs"]]
        assert result[f"ttft_p{q}_rel_error_range"] == [min(errors), max(errors)]
        assert min(errors) <= result[f"ttft_p{q}_rel_error"] <= max(errors)
        for key in ("real_s", "sim_s", "rel_error"):
            assert math.isfinite(result[f"ttft_p{q}_{key}"])
        assert result[f"ttft_p{q}_real_s"] > 0
        assert 0 <= result[f"ttft_p{q}_sensitivity"] < 1  # a 5% change moves it, finitely
        assert -1 <= result[f"ttft_p{q}_rank_error"] <= 1
        assert -1 <= result["pooled"][f"ttft_p{q}_rank_error"] <= 1
    for stage in STAGES:  # in the report and in the printed table
        # Without checkpoint stores, the engines copy nothing from host memory.
        timed = math.isfinite(result["stages"][stage]["real_s"])
        assert timed is (stage != "checkpoint_copy")
        assert any(line.split()[:2] == ["locality", stage] for line in done.stdout.splitlines())
    lines = done.stdout.splitlines()  # what of the machine it held, and where its time went
    footprint = "machine footprint (GB, start -> peak): memory in use"
    assert any(line.startswith(footprint) for line in lines)
    assert any(line.startswith("wall time") and "replays" in line for line in lines)
    for run in result["runs"]:  # predicted from the start-up timed again around the replay
        kept = json.loads((out / f"seed-{run['seed']}" / "locality-profile.json").read_text())
        assert run["sim"]["instance_startup_s"] == kept["derived"]["instance_startup_s"]
        probes = kept["measurements"]["instance_startup_around_replay"]
        assert probes["n"] == 6 and probes["min"] > 0  # three before the replay, three after
        assert run["sim"]["profile_instance_startup_s"] == DERIVED["instance_startup_s"]
        assert set(run["with_profile_startup"]) == {f"ttft_p{q}_rel_error" for q in (50, 90, 99)}
    for run in result["runs"]:
        real = pd.read_csv(out / f"seed-{run['seed']}" / "locality-real.csv")
        assert len(real) == run["requests"] == run["real_ttfts"] > 0
        assert real["ttft_s"].notna().all() and (real["ttft_s"] > 0).all()
    # The simulator's side reruns from the inputs written beside the report: nothing else.
    assert report["simulator_inputs"] == [
        "seed-N/trace.csv",
        "cluster.toml",
        "seed-N/POLICY-profile.json",
    ]
    files = {"trace": "seed-1/trace.csv", "cluster": "cluster.toml"}
    files["profile"] = "seed-1/locality-profile.json"
    inputs = [f"--{name}={out / file}" for name, file in files.items()]
    run = tmp_path / "run"
    sim = [sys.executable, "-m", "sim", "run", "--policy", "locality", "--seed", "1", "--quiet"]
    subprocess.run([*sim, "--out", str(run), *inputs], check=True, timeout=120)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["ttft_p50_s"] == pytest.approx(result["runs"][1]["ttft_p50_sim_s"])


@pytest.mark.slow
def test_a_killed_replay_leaves_nothing_behind(profile, tmp_path):
    disk, shm = tmp_path / "disk", Path("/dev/shm")
    disk.mkdir()
    before = set(shm.glob("thaw-validate-*"))
    command = [sys.executable, "-m", "calibration.validate", "--quick", "--profile",
               str(profile), "--policies", "locality", "--dir", str(disk)]  # fmt: skip
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as child:
        deadline = time.monotonic() + 120
        while not list(disk.glob("thaw-validate-*/trace.csv")) and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(2)  # into the replay: instances starting, checkpoints being read
        child.terminate()
        child.communicate(timeout=60)
    assert child.returncode == 143
    assert not list(disk.iterdir())
    assert set(shm.glob("thaw-validate-*")) == before
