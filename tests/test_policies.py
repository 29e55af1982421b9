"""Policies decide over a hand-built view: no simulation needed."""

from dataclasses import dataclass, field

import numpy as np
import pytest

from policies import get_policy, policy_names
from policies.base import Request, Start, Wait


@dataclass
class View:
    """Four 4-GPU servers; `in_use[s]` GPUs busy; cache contents per tier."""

    in_use: list[int]
    dram: dict[str, list[int]] = field(default_factory=dict)
    ssd: dict[str, list[int]] = field(default_factory=dict)
    now: float = 0.0

    def gpus_needed(self, model):
        return 2 if model == "big" else 1

    def candidates(self, model):
        return [s for s in range(len(self.in_use)) if self.can_start(s, model)]

    def candidate_count(self, model):
        return len(self.candidates(model))

    def candidate(self, model, k):
        return self.candidates(model)[k]

    def can_start(self, server, model):
        return 4 - self.in_use[server] >= self.gpus_needed(model)

    def holders(self, model, tier):
        return (self.dram if tier == "dram" else self.ssd).get(model, [])

    def gpus_in_use(self, server):
        return self.in_use[server]


def request(model="m"):
    return Request(0, model, 0.0, 10, 10)


def place(name, view, model="m", seed=0):
    return get_policy(name)(np.random.default_rng(seed)).place(request(model), view)


def test_both_policies_are_registered():
    assert {"random", "locality"} <= set(policy_names())
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


def test_locality_prefers_dram_then_ssd_then_the_least_loaded():
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
