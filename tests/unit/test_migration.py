"""Live migration and preemption, timelines checked by hand on two one-GPU servers.

The scenario: model b runs on server 0, which holds model a's checkpoint on its SSD; a
request for a arrives. Starting a on server 1 means a slow remote load (16 s); migrating
b to server 1 (which holds b on its SSD) frees server 0 for a fast SSD load of a.
"""

from dataclasses import replace

import pandas as pd
import pytest
from conftest import GiB, simulate, tiny_config

from sim.engine.simulator import Simulation
from thaw_kernel import seeds

STARTUP = 2.0
SSD_LOAD = 4 * GiB / (2 * GiB)
REMOTE_LOAD = 4 * GiB / (256 * 2**20)
PREFILL = 1.0  # 1024 prompt tokens at 1024 tokens/s
STEP = 0.125  # one decode step, batch of one
PER_TOKEN = 4 / (256 * 2**20) + 1 / 1024.0  # send 4 bytes (the default), recompute one
ROUND_FIXED = 0.0625
# b's request at t=0 (SSD load on server 0), a's request at t=10.
ROWS = [(0.0, "b", 1024, 1000), (10.0, "a", 1024, 2)]


def two_servers(tmp_path, max_batch: int = 4, migration: str = ""):
    """Two one-GPU servers; a on server 0's SSD, b on both; a slow remote store; rounds
    of 62.5 ms overhead, and the `[migration]` keys in `migration` besides."""
    return tiny_config(
        tmp_path,
        count=2,
        gpus=1,
        max_batch=max_batch,
        ssd_a="[0]",
        ssd_b="[0, 1]",
        network="256MiB/s",
        extra=f"\n[migration]\nround_overhead_s = 0.0625\n{migration}",
    )


@pytest.fixture
def config(tmp_path):
    return two_servers(tmp_path)


def expected_migration_timeline() -> dict[str, float]:
    """The timeline of ROWS under `migration`, computed from the model's definition."""
    b_first_token = STARTUP + SSD_LOAD + PREFILL  # 5 s, on server 0
    target_ready = 10.0 + STARTUP + SSD_LOAD  # b's new instance on server 1
    context = 1024 + 1 + (target_ready - b_first_token) / STEP  # tokens b holds then
    round_1 = PER_TOKEN * context + ROUND_FIXED
    new_tokens = round_1 / STEP  # generated during round 1: under 20, so it stops
    assert new_tokens < 20
    stop = target_ready + round_1  # server 0 is free
    pause = PER_TOKEN * new_tokens + ROUND_FIXED
    generated_on_0 = 1 + (stop - b_first_token) / STEP
    a_ready = stop + STARTUP + SSD_LOAD
    return {
        "stop": stop,
        "pause": pause,
        "b_bytes": 4 * (1024 + generated_on_0),
        "b_done": stop + pause + (1000 - generated_on_0) * STEP,
        "a_startup": a_ready - 10.0,
        "a_ttft": a_ready + PREFILL - 10.0,
    }


def test_locality_would_load_a_remotely_on_the_other_server(config):
    sim = simulate(config, ROWS, "locality")
    assert sim.table.server[1] == 1
    assert sim.table.ttft_s[1] == STARTUP + REMOTE_LOAD + PREFILL  # 19 s


@pytest.mark.parametrize("policy", ["migration", "startup-aware"])
def test_migration_timeline_matches_the_hand_computation(config, policy):
    sim = simulate(config, ROWS, policy)
    t, want = sim.table, expected_migration_timeline()
    assert sim.migrations == 1 and sim.loads_by_tier == {"dram": 0, "ssd": 3, "remote": 0}
    assert t.server[1] == 0 and t.tier[1] == 2  # a on server 0, from its SSD
    assert t.ttft_s[1] == pytest.approx(want["a_ttft"], rel=1e-12)
    assert want["a_ttft"] < STARTUP + REMOTE_LOAD + PREFILL  # better than locality's
    assert t.migration_pause_s[0] == pytest.approx(want["pause"], rel=1e-12)
    assert t.migration_rounds[0] == 1
    assert t.migration_bytes[0] == pytest.approx(want["b_bytes"], rel=1e-12)
    assert t.e2e_s[0] == pytest.approx(want["b_done"], rel=1e-12)
    assert t.migration_pause_s[1] == 0 and t.migrations[1] == 0


def test_startup_aware_estimates_the_migration_it_chooses(config):
    sim = simulate(config, ROWS, "startup-aware")
    want = expected_migration_timeline()
    assert sim.table.estimate_s[1] == pytest.approx(want["a_startup"], rel=1e-12)
    assert sim.table.startup_s[1] == pytest.approx(want["a_startup"], rel=1e-12)


def test_a_migration_whose_requests_finish_first_just_releases_the_source(config):
    # b's 60 tokens are done at 5 + 59 * 0.125 = 12.375 s, before its new instance is
    # ready (t = 14): server 0 is released then, and a starts at once.
    sim = simulate(config, [(0.0, "b", 1024, 60), (10.0, "a", 1024, 2)], "migration")
    t = sim.table
    b_done = STARTUP + SSD_LOAD + PREFILL + 59 * STEP
    assert sim.migrations == 1 and t.migrations[0] == 0
    assert t.e2e_s[0] == b_done
    assert t.ttft_s[1] == b_done + STARTUP + SSD_LOAD + PREFILL - 10.0


def test_preemption_restarts_the_displaced_request_from_scratch(config):
    sim = simulate(config, ROWS, "preemption")
    t = sim.table
    assert sim.preemptions == 1 and t.preemptions[0] == 1
    # a starts on server 0 at once; b starts over on server 1 (its SSD), from t = 10.
    assert t.ttft_s[1] == STARTUP + SSD_LOAD + PREFILL
    assert t.server[0] == 1
    assert t.ttft_s[0] == 10.0 + STARTUP + SSD_LOAD + PREFILL
    assert t.e2e_s[0] == t.ttft_s[0] + 999 * STEP
    assert t.wasted_tokens == 1 + (10.0 - (STARTUP + SSD_LOAD + PREFILL)) / STEP
    assert t.queue_s[0] + t.startup_s[0] + t.prefill_s[0] == t.ttft_s[0]


def test_the_summary_counts_migrations_that_moved_requests(config):
    moved = simulate(config, ROWS, "migration")
    emptied = simulate(config, [(0.0, "b", 1024, 60), (10.0, "a", 1024, 2)], "migration")
    assert (moved.migrations, moved.migrations_moved) == (1, 1)
    assert (emptied.migrations, emptied.migrations_moved) == (1, 0)


def test_a_migrating_instance_keeps_the_gpus_the_newcomer_does_not_need(tmp_path):
    # A 2-GPU instance of "big" leaves server 0 for a 1-GPU "a"; its other GPU stays
    # busy until it has left, so "b" (also held on server 0's SSD) cannot start at once.
    big = '\n[models.big]\nweights = "8GiB"\ngpus = 2\nprefill_tokens_per_s = 1024.0\n'
    big += "decode_step_s = 0.125\nssd_servers = [0, 1]\n"
    config = tiny_config(tmp_path, count=2, ssd_a="[0]", ssd_b="[0]", extra=big)
    rows = [(0.0, "big", 1024, 2000), (20.0, "a", 1024, 10), (20.5, "b", 1024, 10)]
    sim = simulate(config, rows, "migration")
    t = sim.table
    assert sim.migrations == 1 and list(t.server) == [0, 0, 0]
    # big's new instance on server 1 is ready at 20 + 2 + 8 GiB / 2 GiB/s = 26 at the
    # earliest; only after that can big leave server 0 and free its second GPU.
    assert 20.5 + t.queue_s[2] >= 26.0


def test_gpu_seconds_count_what_was_occupied_while_a_newcomer_waited(tmp_path):
    # A 2-GPU "big" takes server 0's free GPU at once and waits for b's to be migrated:
    # GPU-seconds must equal the integral of occupied GPUs over time, nothing lost.
    big = '\n[models.big]\nweights = "8GiB"\ngpus = 2\nprefill_tokens_per_s = 1024.0\n'
    big += "decode_step_s = 0.125\nssd_servers = [0]\n"
    config = tiny_config(tmp_path, count=2, ssd_a="[0]", ssd_b="[0, 1]", extra=big)
    trace = pd.DataFrame(
        [(0.0, "b", 1024, 1000), (10.0, "big", 1024, 2)],
        columns=["arrival_s", "model", "input_tokens", "output_tokens"],
    )
    sim = Simulation(config, trace, "migration", seeds.rng(0, "policy"))
    area = {"t": 0.0, "occupied": 0, "sum": 0.0}

    def integrate(_event):
        now = sim.clock.now
        area["sum"] += area["occupied"] * (now - area["t"])
        area["t"] = now
        area["occupied"] = sum(s.gpus - s.free_gpus for s in sim.cluster.servers)

    sim.clock.after_event = integrate
    sim.run()
    assert sim.migrations == 1
    assert sim.cluster.gpu_seconds == pytest.approx(area["sum"], rel=1e-12)


def test_a_request_moved_before_its_prefill_started_up_when_its_first_instance_was_ready(
    tmp_path,
):
    # Six 2,048-token prompts for b join its instance on server 0 (ready since 4 s) at
    # 9 s and are prefilled one after another, 2 s each: 9-11 s, ..., 19-21 s. With one
    # round at most, the source stops when round 1 ends, while the sixth is prefilling;
    # that prefill is redone on the target after the pause.
    config = two_servers(tmp_path, max_batch=8, migration="max_rounds = 1\n")
    rows = [ROWS[0]] + [(9.0, "b", 2048, 10)] * 6 + [ROWS[1]]
    sim = simulate(config, rows, "migration")
    t, log = sim.table, sim.cluster.log.frame()
    stop = log.loc[log["end"] == "migrated", "ended_s"].item()
    assert 19.0 < stop < 21.0  # the sixth prompt's prefill was under way
    sixth = 6
    assert t.migrations[sixth] == 1 and t.queue_s[sixth] == 0.0
    assert t.startup_s[sixth] == 0.0  # its first instance was ready when it was placed
    first_token = 9.0 + t.ttft_s[sixth]
    assert first_token == pytest.approx(stop + t.migration_pause_s[sixth] + 2.0, rel=1e-12)
    assert t.prefill_s[sixth] == pytest.approx(t.ttft_s[sixth], rel=1e-12)


def test_under_drop_a_preempted_request_is_turned_away(config):
    sim = simulate(replace(config, queue="drop"), ROWS, "preemption")
    t = sim.table.frame()
    assert sim.preemptions == 1 and t["preemptions"][0] == 1
    assert t["status"][0] == "dropped" and t["server"][0] == -1 and pd.isna(t["ttft_s"][0])
    assert t["status"][1] == "done" and t["ttft_s"][1] == STARTUP + SSD_LOAD + PREFILL
