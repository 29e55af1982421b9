"""Sleeping engines (`sim.model.sleepers`), worked by hand on the tiny cluster: 4 GiB
checkpoints, 1 GiB/s to the remote store, 2 GiB/s SSD, 4 GiB/s PCIe per GPU, 16 GiB GPUs,
8 GiB of DRAM, a 2 s start-up, prefills at 1,024 tokens/s; keep-alive 8 s, then asleep
for up to 100 s, keeping 2 GiB per GPU (1/8 of its memory)."""

import json

import pytest

from sim.config import read_config
from sim.engine.invariants import InvariantError
from sim.model.cache import CheckpointCache
from sim.results.summary import scheduling_figures, summarize
from tests.conftest import TINY, simulate
from thaw_kernel.errors import InputError


def config(tmp_path, level=1, gpus=2, keep_alive='"fixed:8,sleep=100"', memory="2GiB", **kw):
    head = f'keep_alive = {keep_alive}\nsleep = {{level = {level}, gpu_memory = "{memory}"}}\n'
    fields = dict(count=1, gpus=gpus, max_batch=4, ssd_a="[]", ssd_b="[]", keep_alive=8.0)
    fields |= dict(network="1GiB/s", host_cores=32, model_keys="")
    path = tmp_path / "sleepy.toml"
    path.write_text(head + TINY.format(**(fields | kw)))
    return read_config(path)


def test_a_level_1_engine_sleeps_after_its_keep_alive_and_wakes_over_pcie(tmp_path):
    # Remote load 2 -> 6 s, prefill 0.5 s: idle at 6.5, asleep at 14.5 (weights to DRAM).
    # At 20 s the next request wakes it: 4 GiB over 4 GiB/s of PCIe, 1 s; prefill 0.5 s.
    # A cold start from DRAM would take 2 + 1 s; the remote one took 6 s.
    sim = simulate(config(tmp_path), [(0.0, "a", 512, 1), (20.0, "a", 512, 1)], check=True)
    assert list(sim.table.ttft_s) == [6.5, 1.5]
    assert sim.table.estimate_s[1] == sim.table.startup_s[1] == 1.0  # the wake, priced
    assert sim.sleepers.wakes == {1: 1, 2: 0}
    assert sum(sim.loads_by_tier.values()) == 1  # a wake is not a cold start
    # Asleep 14.5 -> 20 and 29.5 -> 129.5 (then stopped), keeping 1/8 of one GPU.
    assert sim.sleepers.gpu_seconds == (5.5 + 100.0) / 8
    figures = scheduling_figures(sim)["gpu_seconds_by_state"]
    assert figures == {"serving": 1.0, "idle_warm": 16.0, "starting": 7.0, "sleeping": 13.1875}
    log = sim.cluster.log.frame()
    assert list(log["end"]) == ["asleep", "woken", "asleep", "expired"]
    assert list(log["asleep"]) == [False, True, False, True]
    assert list(log["gpus"]) == [1, 0, 1, 0]
    assert list(log["ended_s"]) == [14.5, 20.0, 29.5, 129.5]


@pytest.mark.parametrize("policy", ["locality", "startup-aware"])
def test_a_level_2_engine_reloads_from_the_fastest_tier(tmp_path, policy):
    # SSD load 2 -> 4 s, done 4.5, asleep at 12.5 with no DRAM kept; the checkpoint went
    # into DRAM with the load, so the wake reloads it from there: 1 s (`startup-aware`
    # prices a start from DRAM at 2 + 1 s: it wakes).
    sim = simulate(
        config(tmp_path, level=2, ssd_a="[0]"),
        [(0.0, "a", 512, 1), (20.0, "a", 512, 1)],
        policy,
    )
    assert list(sim.table.ttft_s) == [4.5, 1.5]
    assert sim.table.estimate_s[1] == sim.table.startup_s[1] == 1.0
    assert sim.sleepers.wakes == {1: 0, 2: 1}
    assert list(sim.cluster.log.frame()["tier"])[:3] == ["ssd", "ssd", "dram"]


@pytest.mark.parametrize("policy", ["locality", "startup-aware"])
def test_a_sleeping_engine_frees_its_gpu_and_wakes_by_swapping_once_it_is_idle(tmp_path, policy):
    # One GPU. a sleeps at 14.5; b starts on the freed GPU at 15 (ready 21, busy until
    # 21 + 2 = 23 prefilling); a request for a at 22 waits for the GPU. At 23 b idles and
    # the wake swaps it out: b's weights to DRAM (1 s), then a's back (1 s): a is ready at
    # 25 and its prefill ends at 25.5, TTFT 3.5. b sleeps from 23 on. `startup-aware`
    # prices the wake at 2 s before it swaps, against a start on the GPU b leaves: b's
    # load put b in DRAM, evicting a's checkpoint (a's reserved weights are not a cache
    # entry), so 2 s, then a's from the SSD (where its remote load put it), 2 s: it wakes.
    rows = [(0.0, "a", 512, 1), (15.0, "b", 2048, 1), (22.0, "a", 512, 1)]
    sim = simulate(config(tmp_path, gpus=1), rows, policy, check=True)
    assert list(sim.table.ttft_s) == [6.5, 8.0, 3.5]
    assert sim.table.estimate_s[2] == sim.table.startup_s[2] == 2.0  # offload, then copy
    assert sim.sleepers.wakes[1] == 1
    log = sim.cluster.log.frame()
    b = log[log["instance"] == 1]
    assert list(zip(b["ended_s"], b["end"], strict=True)) == [(23.0, "asleep"), (123.0, "expired")]


@pytest.mark.parametrize("policy", ["locality", "startup-aware"])
def test_a_reload_pins_its_source_before_the_swap_reserves_dram(tmp_path, policy):
    # a's engine sleeps at level 2, b at level 1; one GPU, 8 GiB of DRAM. a loads
    # remotely (2 -> 6 s; its checkpoint into SSD and DRAM), sleeps at 14.5 keeping no
    # DRAM. b starts at 15 (ready 21, b into DRAM beside a), prefills until 23; a request
    # for a at 22 waits. At 23 the wake pins a's DRAM copy, then swaps b out: b's 4 GiB
    # reservation can only evict b's entry (1 s), and a reloads from DRAM (1 s): ready at
    # 25, TTFT 3.5, priced at 2 s beforehand. Unpinned, the reservation would have
    # evicted a, the least recently used, and a would reload from the SSD.
    config(tmp_path, gpus=1)
    path = tmp_path / "sleepy.toml"
    text = path.read_text().replace("[models.a]", '[models.a]\nengine = "deep"')
    path.write_text(
        text + '[engines.deep]\nstages = [{name = "init", seconds = 2.0}, {name = "load"}]\n'
        'sleep = {level = 2, gpu_memory = "2GiB"}\n'
    )
    rows = [(0.0, "a", 512, 1), (15.0, "b", 2048, 1), (22.0, "a", 512, 1)]
    sim = simulate(read_config(path), rows, policy, check=True)
    assert list(sim.table.ttft_s) == [6.5, 8.0, 3.5]
    assert sim.table.estimate_s[2] == sim.table.startup_s[2] == 2.0
    assert sim.sleepers.wakes == {1: 0, 2: 1}
    assert sim.table.frame()["tier"][2] == "dram"


@pytest.mark.parametrize("policy", ["locality", "startup-aware"])
def test_a_level_1_wake_holds_its_weights_dram_until_its_copy_ends(tmp_path, policy):
    # As above with 6 GiB of DRAM: a's 4 GiB of weights are reserved while it sleeps, and
    # stay so while they cross to the GPU. At 23 the wake needs b's GPU: b's weights
    # would need 4 GiB of DRAM beside a's, and 2 are left, so b stops rather than sleeps,
    # and a's copy alone takes 1 s: ready at 24, TTFT 2.5. Released at the wake's start,
    # a's room would have let b sleep into DRAM that a's weights still filled.
    config(tmp_path, gpus=1)
    path = tmp_path / "sleepy.toml"
    path.write_text(path.read_text().replace('dram = "8GiB"', 'dram = "6GiB"'))
    rows = [(0.0, "a", 512, 1), (15.0, "b", 2048, 1), (22.0, "a", 512, 1)]
    sim = simulate(read_config(path), rows, policy, check=True)
    assert list(sim.table.ttft_s) == [6.5, 8.0, 2.5]
    assert sim.table.estimate_s[2] == sim.table.startup_s[2] == 1.0
    b = sim.cluster.log.frame().query("instance == 1")
    assert list(b["end"]) == ["reclaimed"]


def test_the_dram_a_wake_may_reserve_counts_the_checkpoint_it_will_pin():
    cache = CheckpointCache(8, lambda model, held: None)
    cache.admit("a", 4)
    cache.admit("b", 2)
    assert cache.reservable() == 8  # every entry can be evicted
    assert cache.reservable("a") == 4 and cache.reservable("c") == 8
    cache.pin("a")
    assert cache.reservable() == cache.reservable("a") == 4  # counted once
    assert cache.reserve(4) and not cache.reserve(1)


def test_an_engine_that_would_keep_too_much_gpu_memory_stops_instead(tmp_path):
    # 13 GiB kept > the 16 - 4 GiB a GPU keeps free for the largest awake model.
    sim = simulate(config(tmp_path, memory="13GiB"), [(0.0, "a", 512, 1), (20.0, "a", 512, 1)])
    assert sim.sleepers.wakes == {1: 0, 2: 0}
    assert list(sim.table.ttft_s) == [6.5, 3.5]  # a cold start from DRAM


def test_it_is_off_without_the_keep_alive_option(tmp_path):
    sim = simulate(config(tmp_path, keep_alive='"fixed"'), [(0.0, "a", 512, 1)])
    assert sim.sleepers is None
    assert list(sim.cluster.log.frame()["end"]) == ["expired"]


def test_the_summary_counts_wakes(tmp_path):
    sim = simulate(config(tmp_path), [(0.0, "a", 512, 1), (20.0, "a", 512, 1)])
    trace = tmp_path / "t.csv"
    trace.write_text("x\n")
    summary = json.loads(json.dumps(summarize(sim, "locality", 0, trace)))
    assert summary["wakes"] == 1 and summary["wakes_by_level"] == {"1": 1, "2": 0}


@pytest.mark.parametrize(
    ("head", "message"),
    [
        ('keep_alive = "fixed:sleep=5"\n', "keep_alive: 'fixed:sleep=5' lets instances sleep"),
        ('sleep = {level = 3, gpu_memory = "1GiB"}\n', r"sleep\.level: expected 1 or 2"),
        ('sleep = {level = 1, gpu_memory = "-1GiB"}\n', r"sleep\.gpu_memory"),
        ("sleep = {level = 1}\n", r"sleep\.gpu_memory: missing"),
        ('keep_alive = "fixed:sleep=-1"\n', r"keep_alive: sleep: expected a number"),
    ],
)
def test_bad_sleep_settings_are_refused_naming_the_key(tmp_path, head, message):
    fields = dict(count=1, gpus=2, max_batch=4, ssd_a="[]", ssd_b="[]", keep_alive=8.0)
    fields |= dict(network="1GiB/s", host_cores=32, model_keys="")
    path = tmp_path / "bad.toml"
    path.write_text(head + TINY.format(**fields))
    with pytest.raises(InputError, match=message):
        read_config(path)


def test_the_audit_catches_dram_left_reserved_by_a_wake(tmp_path, monkeypatch):
    monkeypatch.setattr(CheckpointCache, "release", lambda self, size: None)
    with pytest.raises(InvariantError, match="DRAM reserves"):
        simulate(config(tmp_path), [(0.0, "a", 512, 1), (20.0, "a", 512, 1)], check=True)
