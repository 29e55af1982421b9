"""Property: on any cluster (`test_random_clusters`'s), an engine woken at level 1 is
ready exactly when its wake was priced to be (`Sleepers.wake_s`: the swap, then the copy
over PCIe, replayed before the wake makes them), under a policy that weighs wakes and one
that wakes first, and the timeline agrees with the instance log (`tests/timeline.py`).
Instances idle for 1 s fall asleep for up to 30 s, so a 60-s trace wakes them often."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from timeline import check_timeline

from sim.config import read_config
from sim.engine.simulator import Simulation
from tests.property.test_random_clusters import clusters, traces
from thaw_kernel import seeds

SLEEPY = 'keep_alive = "fixed:1,sleep=30"\nsleep = {level = 1, gpu_memory = "1GiB"}\n'
TOP = ("keep_alive", "sleep =")  # the drawn cluster's keep-alive and sleep lines


@pytest.mark.parametrize("policy", ["startup-aware", "locality"])
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cluster=clusters(), data=st.data())
def test_a_level_1_wake_is_ready_when_priced(tmp_path, policy, cluster, data):
    kept = [line for line in cluster.splitlines() if not line.startswith(TOP)]
    path = tmp_path / "cluster.toml"
    path.write_text(SLEEPY + "\n".join(kept) + "\n")
    config = read_config(path)
    trace = data.draw(traces(list(config.models), max_output=40, max_size=60))
    sim = Simulation(config, trace, policy, seeds.rng(5, "policy"), check=True)
    sim.run()
    table, log = sim.table, sim.cluster.log.frame()
    check_timeline(table.frame(), log, config)
    for woken in log[log["end"] == "woken"].itertuples():
        for i in np.flatnonzero(
            (table.instance == woken.instance)
            & (table.placed_at == woken.ended_s)
            & ~np.isnan(table.estimate_s)
        ):  # the request that woke it (those joining meanwhile make no estimate)
            assert table.estimate_s[i] == pytest.approx(table.startup_s[i], rel=1e-9, abs=1e-9)
