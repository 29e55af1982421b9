"""Policies decide over a hand-built view: no simulation needed."""

from dataclasses import dataclass, field

import numpy as np
import pytest

from policies import get_policy, policy_names
from policies.base import Move, Request, RoundCost, Running, Sleeping, Start, Wait, Wake
from policies.displacement import Ranked, ranked_destinations
from thaw_kernel.stages import default_steps

LOAD_S = {"dram": 1.0, "ssd": 4.0, "remote": 16.0}
COST = RoundCost(per_token_s=0.001, fixed_s=0.01, stop_tokens=20, max_rounds=10)


@dataclass
class View:
    """Four 4-GPU servers; `in_use[s]` GPUs busy; cache contents per tier; the busy
    instances that may be moved; loads take LOAD_S by tier, with no link sharing."""

    in_use: list[int]
    dram: dict[str, list[int]] = field(default_factory=dict)
    ssd: dict[str, list[int]] = field(default_factory=dict)
    busy: dict[int, list[Running]] = field(default_factory=dict)
    asleep: list[Sleeping] = field(default_factory=list)  # offered wakes, any model
    now: float = 0.0

    def steps(self, model):
        return default_steps(2.0)

    def cpu_s(self, server, cpu_seconds, delay):
        return max(cpu_seconds)  # cores to spare: no contention

    def hidden_prefill_s(self, model, tokens):
        return 0.0  # no engine executes while loading

    def gpus_needed(self, model):
        return {"big": 2, "huge": 3}.get(model, 1)

    def candidates(self, model):
        return [s for s in range(len(self.in_use)) if self.can_start(s, model)]

    def candidate_count(self, model):
        return len(self.candidates(model))

    def candidate(self, model, k):
        return self.candidates(model)[k]

    def by_occupancy(self, model):
        return iter(sorted(self.candidates(model), key=lambda s: (self.in_use[s], s)))

    def least_occupied_candidate(self, model):
        return next(self.by_occupancy(model), None)

    def can_start(self, server, model):
        return 4 - self.in_use[server] >= self.gpus_needed(model)

    def holders(self, model, tier):
        return (self.dram if tier == "dram" else self.ssd).get(model, [])

    def gpus_in_use(self, server):
        return self.in_use[server]

    def available_gpus(self, server):
        return 4 - self.in_use[server]

    def total_available_gpus(self):
        return sum(4 - n for n in self.in_use)

    def can_host(self, server, model):
        return True

    def fastest_tier(self, server, model):
        for tier in ("dram", "ssd"):
            if server in self.holders(model, tier):
                return tier
        return "remote"

    def load_s(self, server, model, delay):
        return LOAD_S[self.fastest_tier(server, model)]

    def copy_s(self, server, model):
        return 0.0  # its engines load straight onto the GPUs: no copy stage

    def running(self, server):
        return self.busy.get(server, [])

    def round_cost(self, model, source, destination):
        return COST

    def sleeping(self, model):
        return self.asleep


def busy(instance_id, model, gpus, tokens):
    """A running instance decoding 4 requests at 50 ms a step."""
    return Running(instance_id, model, gpus, tokens, decoding=4, step_s=0.05)


def request(model="m"):
    return Request(0, model, 0.0, 10, 10)


def place(name, view, model="m", seed=0):
    return get_policy(name)(np.random.default_rng(seed)).place(request(model), view)


def test_every_policy_is_registered():
    assert set(policy_names()) >= {"random", "locality", "migration", "preemption", "startup-aware"}
    with pytest.raises(KeyError, match="known: "):
        get_policy("clairvoyant")


def test_random_picks_uniformly_among_servers_with_room():
    view = View(in_use=[4, 0, 3, 1])
    picks = [place("random", view, "big", seed).server for seed in range(400)]
    assert set(picks) == {1, 3}
    assert 0.4 < picks.count(1) / len(picks) < 0.6


def test_random_is_deterministic_per_seed_and_waits_when_full():
    view = View(in_use=[0, 0, 0, 0])
    assert place("random", view, seed=7) == place("random", view, seed=7)
    assert place("random", View(in_use=[4, 4, 4, 4])) == Wait()


def test_random_draws_each_request_by_its_index_not_by_the_starts_before_it():
    view = View(in_use=[0, 0, 0, 0])
    requests = [Request(i, "m", float(i), 10, 10) for i in range(200)]
    alone = [get_policy("random")(np.random.default_rng(3)).place(r, view) for r in requests]
    one = get_policy("random")(np.random.default_rng(3))
    in_turn = [one.place(r, view) for r in requests]
    skipping = get_policy("random")(np.random.default_rng(3))
    odd = [skipping.place(r, view) for r in requests[1::2]]
    assert in_turn == alone and odd == alone[1::2]
    picks = [d.server for d in alone]
    assert all(25 <= picks.count(s) <= 75 for s in range(4))  # 50 expected of each
    other_seed = [get_policy("random")(np.random.default_rng(4)).place(r, view) for r in requests]
    assert other_seed != alone


def test_random_draws_a_prewarm_from_its_stream():
    view = View(in_use=[0, 0, 0, 0])
    policy = get_policy("random")(np.random.default_rng(0))
    made_up = Request(-1, "m", 0.0, 1, 1)
    assert len({policy.place(made_up, view).server for _ in range(40)}) > 1


def test_locality_prefers_dram_then_ssd_then_the_least_occupied():
    view = View(in_use=[2, 1, 3, 0], dram={"m": [0, 2]}, ssd={"m": [1, 3]})
    assert place("locality", view) == Start(0)  # DRAM holders 0 (2 in use) and 2 (3 in use)
    view.in_use[0] = view.in_use[2] = 4
    assert place("locality", view) == Start(3)  # SSD holders 1 and 3: 3 is less loaded
    view.in_use[1] = view.in_use[3] = 4
    view.in_use[2] = 2
    assert place("locality", view) == Start(2)  # a remote load on the only server with room
    view.in_use[2] = 4
    assert place("locality", view) == Wait()


def test_locality_breaks_ties_by_lowest_id():
    assert place("locality", View(in_use=[1, 0, 0, 1])) == Start(1)


def full_dram_holder() -> View:
    """Server 0 holds "big" (2 GPUs) in DRAM but is full; server 3 has room."""
    return View(
        in_use=[4, 4, 4, 1],
        dram={"big": [0], "x": [3]},
        busy={0: [busy(1, "x", 1, 100), busy(2, "y", 2, 5000), busy(3, "z", 1, 50)]},
    )


def test_migration_moves_the_cheapest_set_that_frees_enough_gpus():
    # Freeing 2 GPUs: {x, z} costs 0.150 + 2 x 0.01 s of first round, {y} 5.01 s.
    decision = place("migration", full_dram_holder(), "big")
    assert decision == Start(0, migrate=(Move(1, 3), Move(3, 3)))


def test_migration_falls_back_to_locality_when_nothing_can_move():
    view = full_dram_holder()
    view.in_use[3] = 4  # nowhere for the displaced instances to go
    assert place("migration", view, "big") == Wait()
    # Room on server 1, but server 0 runs only "big" itself: moving it would not help.
    view.in_use[1] = 2
    view.busy[0] = [busy(1, "big", 2, 10), busy(2, "big", 2, 10)]
    assert place("migration", view, "big") == Start(1)


def test_preemption_stops_the_instances_losing_the_fewest_tokens():
    view = full_dram_holder()
    view.in_use[3] = 4  # preemption needs no destination
    assert place("preemption", view, "big") == Start(0, preempt=(1, 3))


def test_a_preempted_request_never_preempts():
    view = full_dram_holder()
    view.in_use[3] = 4
    again = Request(0, "big", 0.0, 10, 10, preempted=True)
    assert get_policy("preemption")(np.random.default_rng(0)).place(again, view) == Wait()


def test_startup_aware_takes_the_cheapest_estimate():
    view = full_dram_holder()
    view.in_use[1] = 2  # a remote start on server 1: 2 + 16 = 18 s
    decision = place("startup-aware", view, "big")
    # Migrating x and z: server 3 is ready for them after 2 + 1 s (x in DRAM there) or
    # 2 + 16 s (z, remote): z's move bounds the wait, beyond the remote start's 18 s.
    assert decision.server == 1 and decision.estimate_s == 18.0
    view.dram["z"] = [3]
    decision = place("startup-aware", view, "big")
    assert decision.server == 0 and decision.migrate == (Move(1, 3), Move(3, 3))
    assert 3.0 + 2.0 + 1.0 < decision.estimate_s < 18.0


def test_startup_aware_weighs_wakes_against_starts_and_prefers_a_wake_on_a_tie():
    # Server 0 holds m in DRAM: a start there takes 2 + 1 = 3 s.
    view = View(in_use=[0, 4, 4, 4], dram={"m": [0]})
    view.asleep = [Sleeping(1, 7, 4.0)]  # a reload from a slower tier: 4 s
    assert place("startup-aware", view) == Start(0, 3.0)
    view.asleep.append(Sleeping(2, 9, 3.0))  # as long as the start
    assert place("startup-aware", view) == Wake(2, 9, 3.0)
    view.asleep.append(Sleeping(3, 5, 0.5))
    assert place("startup-aware", view) == Wake(3, 5, 0.5)


def test_only_startup_aware_weighs_wakes():
    weighs = {name for name in policy_names() if get_policy(name).weighs_wakes}
    assert weighs == {"startup-aware"}


def test_migration_finds_destinations_for_every_displaced_instance_if_any_exist():
    # "huge" needs 3 GPUs: x and y must both leave server 0. x prefers server 1 (DRAM),
    # but only there does y fit: sending x there first would strand y.
    view = View(
        in_use=[4, 2, 3, 4],
        dram={"huge": [0], "x": [1]},
        busy={0: [busy(1, "x", 1, 10), busy(2, "y", 2, 10), busy(3, "huge", 1, 10)]},
    )
    assert place("migration", view, "huge") == Start(0, migrate=(Move(1, 2), Move(2, 1)))


def test_ranked_servers_are_produced_only_as_far_as_they_are_read():
    produced = []

    def source():
        for s in (3, 1, 2):
            produced.append(s)
            yield s

    ranked = Ranked(source())
    assert ranked and produced == [3]
    first, second = iter(ranked), iter(ranked)
    assert next(first) == 3 and next(second) == 3 and produced == [3]
    assert list(first) == [1, 2] and list(second) == [1, 2] and produced == [3, 1, 2]
    assert not Ranked(iter(()))


@pytest.mark.parametrize("holders", [3, 40])  # sorted outright, and picked in order
def test_destinations_rank_dram_then_ssd_holders_then_the_rest(holders):
    in_use = [(7 * s) % 5 for s in range(100)]  # 4 in use: no room for a 1-GPU model
    dram = list(range(0, 2 * holders, 2))
    ssd = list(range(1, 2 * holders + 20, 3))
    view = View(in_use, dram={"a": dram}, ssd={"a": ssd})

    def least_occupied_first(servers):
        return sorted((s for s in servers if in_use[s] < 4), key=lambda s: (in_use[s], s))

    rest = [s for s in range(100) if s not in dram and s not in ssd]
    expected = least_occupied_first(dram)
    expected += least_occupied_first(s for s in ssd if s not in dram)
    expected += least_occupied_first(rest)
    assert list(ranked_destinations(view, "a")) == expected
