"""The startup-time estimator: its formulas, and its accuracy where it should be exact."""

from conftest import simulate, tiny_config

from policies.base import RoundCost, Running
from policies.estimator import leaves_at_s, plan_rounds, start_s
from thaw_kernel.stages import default_steps

COST = RoundCost(per_token_s=2**-10, fixed_s=0.0625, stop_tokens=20, max_rounds=10)


def test_rounds_stop_once_a_round_sees_few_new_tokens():
    # 1000 tokens take 1000/1024 + 1/16 s; 8 tokens/s generate 8.3125 meanwhile (< 20).
    plan = plan_rounds(1000, 8.0, COST)
    assert plan.rounds == 1
    assert plan.rounds_s == 1000 / 1024 + 0.0625
    assert plan.pause_s == 8.3125 / 1024 + 0.0625


def test_rounds_shrink_geometrically_while_recompute_outpaces_generation():
    # 512 tokens/s generated against 1024/s recomputed: each round carries half as many.
    plan = plan_rounds(4096, 512.0, RoundCost(2**-10, 0.0, 20, 10))
    assert plan.rounds == 8  # 4096 -> 2048 -> ... -> 16 < 20 after 8 rounds
    assert plan.rounds_s == sum(4096 / 2**k / 1024 for k in range(8))


def test_rounds_are_capped_when_generation_outpaces_recompute():
    plan = plan_rounds(100, 2048.0, COST)
    assert plan.rounds == COST.max_rounds


class Uncontended:
    def steps(self, model):
        return default_steps(2.0)

    def load_s(self, server, model, delay):
        return 4.0 + delay  # shows which delay the estimator asked about


class Idle(Uncontended):
    def load_s(self, server, model, delay):
        return 4.0

    def round_cost(self, model, source, destination):
        return COST


def test_an_instance_still_prefilling_generates_nothing_while_it_migrates():
    # No decode batch: its decode step (0 s here) must not be divided by.
    prefilling = Running(7, "m", 1, tokens=1024.0, decoding=0, step_s=0.0)
    assert leaves_at_s(Idle(), 0, prefilling, 1) == 6.0 + 1024 * 2**-10 + 0.0625


def test_a_start_is_start_up_then_a_load_that_begins_after_it():
    assert start_s(Uncontended(), 0, "m") == 2.0 + (4.0 + 2.0)
    assert start_s(Uncontended(), 0, "m", delay=3.0) == 5.0 + (4.0 + 5.0)


def test_the_estimate_equals_the_actual_startup_when_nothing_else_happens(tmp_path):
    sim = simulate(tiny_config(tmp_path, ssd_a="[0]"), [(0.5, "a", 512, 1)], "startup-aware")
    assert sim.table.estimate_s[0] == sim.table.startup_s[0] == 2.0 + 2.0  # SSD: 4 GiB at 2


def test_the_estimate_includes_the_wait_on_a_shared_link(tmp_path):
    # a loads remotely from t = 2 at 1 GiB/s. b is decided at t = 1 and loads from t = 3,
    # when a has 3 GiB left: they share the link (0.5 GiB/s each) until a ends at t = 9;
    # b's last GiB takes 1 s more: ready at 10, 9 s after its decision.
    sim = simulate(tiny_config(tmp_path), [(0.0, "a", 512, 1), (1.0, "b", 512, 1)], "startup-aware")
    assert sim.table.server[1] == 0
    assert sim.table.estimate_s[1] == sim.table.startup_s[1] == 9.0


def test_startup_aware_finds_a_free_holder_beyond_its_probes(tmp_path):
    # 20 of 30 one-GPU servers hold a on SSD; 20 long requests fill them one by one.
    # More holders than HOLDER_PROBES: a free one must still be found, never a remote load.
    config = tiny_config(
        tmp_path, count=30, gpus=1, max_batch=1, ssd_a=str(list(range(20))), keep_alive=0.0
    )
    rows = [(0.01 * i, "a", 1024, 2000) for i in range(20)]
    sim = simulate(config, rows, "startup-aware", check=True)
    assert sim.loads_by_tier == {"dram": 0, "ssd": 20, "remote": 0}


def test_startup_aware_probes_the_idle_links_for_a_remote_start(tmp_path):
    # 12 servers of 2 GPUs: 9 requests for a at 0 start 9 remote loads (2 -> 6 s each,
    # alone on its server's 1 GiB/s link). b at 0.5 has more servers without its
    # checkpoint than REMOTE_PROBES: the least occupied come first, an idle link among
    # them, so its load runs alone too: 2.5 -> 6.5 s, then 0.5 s of prefill; the fullest
    # servers are those whose links a's loads cross.
    config = tiny_config(tmp_path, count=12, gpus=2, max_batch=1)
    rows = [(0.0, "a", 512, 1)] * 9 + [(0.5, "b", 512, 1)]
    sim = simulate(config, rows, "startup-aware", check=True)
    t = sim.table
    assert len(set(t.server[:9])) == 9
    assert t.server[9] not in set(t.server[:9])
    assert t.ttft_s[9] == 2.0 + 4.0 + 0.5
