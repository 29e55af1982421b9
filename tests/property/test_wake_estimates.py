"""Property: on any cluster (`test_random_clusters`'s), an engine woken at level 1 is
ready exactly when its wake was priced to be (`Sleepers.wake_s`: the swap, then the copy
over PCIe, replayed before the wake makes them), under a policy that weighs wakes and one
that wakes first. Instances idle for 1 s fall asleep for up to 30 s; the trace asks again
for the model of engines a first run put to sleep while they sleep, so most examples wake
some, and a run of the test that checked too few wakes fails (it would pass on nothing).
Every run's timeline must also agree with its instance log (`tests/timeline.py`)."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, target
from hypothesis import strategies as st
from timeline import check_timeline

from sim.config import read_config
from sim.engine.simulator import Simulation
from sim.spec import ClusterConfig
from tests.property.test_random_clusters import clusters, traces
from thaw_kernel import seeds

SLEEP_S = 30.0
SLEEPY = f'keep_alive = "fixed:1,sleep={SLEEP_S:g}"\nsleep = {{level = 1, gpu_memory = "1GiB"}}\n'
TOP = ("keep_alive", "sleep =")  # the drawn cluster's keep-alive and sleep lines
# Of the examples drawn, the share that must check a wake. Some draws cannot wake any
# (no model leaves 1 GiB of a GPU spare, or its weights exceed the server's DRAM); about
# three in four wake (of 25, never fewer than 14 in 30 runs of the test).
WAKING_SHARE = 0.3


def revisits(
    config: ClusterConfig, trace: pd.DataFrame, policy: str, data: st.DataObject
) -> pd.DataFrame:
    """`trace`, plus a request for the model of each engine that `trace` alone puts to
    sleep, arriving while it sleeps: a trace drawn blind mostly asks again while an
    engine still starts or after its sleep ended, and wakes none."""
    first = Simulation(config, trace, policy, seeds.rng(5, "policy"))
    first.run()
    log = first.cluster.log.frame()
    extra = [
        (
            slept.ended_s + data.draw(st.floats(0.0, SLEEP_S - 1.0)),
            slept.model,
            data.draw(st.integers(1, 4096)),
            data.draw(st.integers(1, 40)),
        )
        for slept in log[log["end"] == "asleep"].itertuples()
    ]
    if not extra:  # nothing fell asleep (no model here can sleep)
        return trace
    again = pd.DataFrame(extra, columns=trace.columns)
    return pd.concat([trace, again]).sort_values("arrival_s", kind="stable", ignore_index=True)


@pytest.mark.parametrize("policy", ["startup-aware", "locality"])
def test_a_level_1_wake_is_ready_when_priced(tmp_path, policy):
    checked: list[int] = []  # per example, the wakes whose estimate was compared

    @settings(derandomize=True)  # the share is of a fixed draw: it cannot fall short by chance
    @given(cluster=clusters(), data=st.data())
    def wakes_are_priced(cluster: str, data: st.DataObject) -> None:
        kept = [line for line in cluster.splitlines() if not line.startswith(TOP)]
        path = tmp_path / "cluster.toml"
        path.write_text(SLEEPY + "\n".join(kept) + "\n")
        config = read_config(path)
        trace = data.draw(traces(list(config.models), max_output=40, max_size=30))
        trace = revisits(config, trace, policy, data)
        sim = Simulation(config, trace, policy, seeds.rng(5, "policy"), check=True)
        sim.run()
        table, log = sim.table, sim.cluster.log.frame()
        check_timeline(table.frame(), log, config)
        n = 0
        for woken in log[log["end"] == "woken"].itertuples():
            for i in np.flatnonzero(
                (table.instance == woken.instance)
                & (table.placed_at == woken.ended_s)
                & ~np.isnan(table.estimate_s)
            ):  # the request that woke it (those joining meanwhile make no estimate)
                assert table.estimate_s[i] == pytest.approx(table.startup_s[i], rel=1e-9, abs=1e-9)
                n += 1
        target(float(n))
        checked.append(n)

    wakes_are_priced()
    waking = sum(n > 0 for n in checked)
    assert waking >= max(1.0, WAKING_SHARE * len(checked)), (waking, len(checked))
