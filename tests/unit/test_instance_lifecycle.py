"""Batched decoding as a fluid process, keep-alive, GPU reclamation and waiting requests."""

from conftest import GiB, simulate, tiny_config

READY = 2.0 + 4.0  # start-up + 4 GiB over the 1 GiB/s network
PREFILL = 0.5  # 512 tokens at 1024 tokens/s


def test_decode_rate_follows_the_batch_size(tmp_path):
    # Both requests join one instance (the second joins it while it is starting).
    # Model a: decode step 0.125 s alone, 0.25 s with two in the batch.
    sim = simulate(tiny_config(tmp_path), [(0.0, "a", 512, 11), (0.0, "a", 512, 5)])
    t = sim.table
    assert list(t.server) == [0, 0] and sim.loads_by_tier["remote"] == 1
    first_a = READY + PREFILL
    first_b = first_a + PREFILL  # prefills run one at a time; decoding waits meanwhile
    assert t.ttft_s[0] == first_a
    assert t.ttft_s[1] == first_b
    # Together from first_b: b needs 4 more tokens at 0.25 s; a then needs 6 more alone.
    b_done = first_b + 4 * 0.25
    assert t.e2e_s[1] == b_done
    assert t.e2e_s[0] == b_done + 6 * 0.125


def test_a_request_joining_mid_decode_pauses_the_batch_for_its_prefill(tmp_path):
    sim = simulate(tiny_config(tmp_path), [(0.0, "a", 512, 9), (READY + 1.0, "a", 512, 2)])
    t = sim.table
    # a decodes alone from READY + 0.5 at 0.125 s/token: 4 tokens by READY + 1.0.
    # b's prefill then runs 0.5 s; both decode at 0.25 s/token; b needs 1 more token.
    assert t.tier[1] == 0  # warm start
    assert t.ttft_s[1] == PREFILL
    b_done = READY + 1.0 + PREFILL + 0.25
    assert t.e2e_s[1] + READY + 1.0 == b_done
    # a had 8 decode tokens to make; 4 done before b, 1 alongside b, 3 alone after.
    assert t.e2e_s[0] == b_done + 3 * 0.125


def test_keep_alive_frees_gpus_and_counts_gpu_seconds(tmp_path):
    sim = simulate(tiny_config(tmp_path), [(0.0, "a", 512, 1)])
    done = READY + PREFILL
    assert sim.clock.now == done + 8.0  # keep_alive_s
    assert sim.cluster.gpu_seconds == 1 * (done + 8.0)
    assert all(not server.instances for server in sim.cluster.servers)
    assert "a" in sim.cluster.servers[0].dram  # the checkpoint stays in DRAM


def test_a_warm_instance_serves_requests_within_keep_alive(tmp_path):
    sim = simulate(tiny_config(tmp_path), [(0.0, "a", 512, 1), (READY + 5.0, "a", 512, 1)])
    assert sim.loads_by_tier["remote"] == 1 and sum(sim.loads_by_tier.values()) == 1
    assert sim.table.ttft_s[1] == PREFILL


def test_a_request_waits_for_gpus_then_reclaims_an_idle_instance(tmp_path):
    config = tiny_config(tmp_path, gpus=1)
    sim = simulate(config, [(0.0, "a", 512, 3), (1.0, "b", 512, 1)])
    t = sim.table
    a_done = READY + PREFILL + 2 * 0.125
    # b waits until a's instance is idle, reclaims its GPU (no keep-alive wait), loads.
    assert t.queue_s[1] == a_done - 1.0
    assert t.ttft_s[1] == (a_done - 1.0) + READY + PREFILL
    assert sim.cluster.gpu_seconds == a_done + (a_done + READY + PREFILL + 8.0 - a_done)


def test_max_batch_starts_a_second_instance(tmp_path):
    config = tiny_config(tmp_path, max_batch=1)
    sim = simulate(config, [(0.0, "a", 512, 1), (0.0, "a", 512, 1)])
    assert sim.loads_by_tier["remote"] == 2
    # Two remote loads share the 1 GiB/s network.
    assert list(sim.table.ttft_s) == [2.0 + 8 * GiB / GiB + PREFILL] * 2


def test_a_waiting_request_takes_the_slot_of_a_request_that_just_finished(tmp_path):
    config = tiny_config(tmp_path, gpus=1, max_batch=1)
    sim = simulate(config, [(0.0, "a", 512, 1), (0.0, "a", 512, 2)])
    first_done = READY + PREFILL
    assert sim.loads_by_tier["remote"] == 1
    assert sim.table.queue_s[1] == first_done
    assert sim.table.e2e_s[1] == first_done + PREFILL + 0.125


def test_a_request_arriving_exactly_when_a_decode_finishes(tmp_path):
    # Step times and prefill rates that are not binary fractions make the decode clock
    # round; the arrival lands at the instant the first request's last token is due.
    extra = """
[models.odd]
weights = "1GiB"
gpus = 1
prefill_tokens_per_s = 1013.7
decode_step_s = 0.0317
decode_step_per_request_s = 0.0011
"""
    config = tiny_config(tmp_path, extra=extra)
    for prompt in range(100, 2100, 40):
        alone = simulate(config, [(0.0, "odd", prompt, 37)])
        finish = float(alone.table.e2e_s[0])
        both = simulate(config, [(0.0, "odd", prompt, 37), (finish, "odd", prompt, 5)])
        assert (both.table.status == 1).all()
        assert both.table.e2e_s[0] >= finish
