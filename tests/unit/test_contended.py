"""The ladder on configs/contended.toml with the bundled trace (see the README)."""

import statistics

import numpy as np
import pytest

import traces
from sim.api import replay
from sim.config import read_config

SEEDS = range(3)


@pytest.fixture(scope="module")
def runs(request):
    config = read_config(request.config.rootpath / "configs" / "contended.toml")
    return {
        (policy, seed): replay(config, traces.default_trace(), policy, seed)
        for policy in ("locality", "migration", "startup-aware")
        for seed in SEEDS
    }


@pytest.mark.slow
def test_startup_aware_beats_locality_at_p99_over_seeds(runs):
    def median_p99(policy):
        return statistics.median(
            np.percentile(runs[(policy, seed)].table.ttft_s, 99) for seed in SEEDS
        )

    assert median_p99("startup-aware") < median_p99("locality")


@pytest.mark.parametrize("policy", ["migration", "startup-aware"])
def test_the_migrating_policies_migrate(runs, policy):
    assert all(runs[(policy, seed)].migrations > 0 for seed in SEEDS)
