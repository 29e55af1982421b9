"""`startup-aware` weighs waking a sleeping engine against starting a new instance
(`ClusterView.sleeping`); the other policies wake first, as before. Worked by hand on two
one-GPU servers: 4 GiB checkpoints, a 2 s start-up, 4 GiB/s of PCIe, prefills at 1,024
tokens/s (512 tokens: 0.5 s), keep-alive 8 s, then asleep at level 2 (keeping 2 GiB a
GPU) for up to 100 s.

- Server 0 (16 GiB GPU) caches nothing: its 2 GiB of DRAM and SSD hold no checkpoint, so
  its engines reload from the remote store, 4 GiB over the `network` link.
- Server 1 (5 GiB GPU) has a's checkpoint on its SSD (2 GiB/s) and keeps 1 GiB of a GPU
  free beside the largest model, less than an engine keeps asleep: its instances stop.
"""

import pytest

from policies.base import Sleeping, Wake
from policies.startup_aware import StartupAware
from sim.config import read_config
from sim.model.sleepers import Sleepers
from tests.conftest import TINY, simulate
from tests.unit.test_keep_alive import CLUSTER, MODEL, PERIODIC
from thaw_kernel.tiers import Tier

GROUPS = """
[[servers]]
name = "bare"
count = 1
gpus = 1
gpu_memory = "16GiB"
dram = "2GiB"
ssd = "2GiB"
ssd_read = "2GiB/s"
network = "{network}"
pcie = "4GiB/s"

[[servers]]
name = "cached"
count = 1
gpus = 1
gpu_memory = "5GiB"
dram = "8GiB"
ssd = "64GiB"
ssd_read = "2GiB/s"
network = "{network}"
pcie = "4GiB/s"
"""


def config(tmp_path, network):
    models = TINY[TINY.index("[models.a]") :].format(
        max_batch=1, ssd_a="[1]", ssd_b="[]", model_keys=""
    )
    head = (
        'keep_alive = "fixed:8,sleep=100"\nsleep = {level = 2, gpu_memory = "2GiB"}\n'
        "instance_startup_s = 2.0\n"
    )
    path = tmp_path / "wake-or-start.toml"
    path.write_text(head + GROUPS.format(network=network) + models)
    return read_config(path)


# Two requests for a at 0 s start an instance on each server (max_batch 1); both are idle
# by 6.5 s. At 20 s the one on server 1 has stopped (12.5 s), leaving a's checkpoint in
# server 1's DRAM (its SSD load put it there), and the one on server 0 sleeps. A third
# request for a comes at 20 s: wake server 0's engine (a remote reload: 4 GiB / network)
# or start on server 1 (2 s, then 4 GiB from DRAM over 4 GiB/s: 3 s)?
ROWS = [(0.0, "a", 512, 1), (0.0, "a", 512, 1), (20.0, "a", 512, 1)]


def test_a_start_on_a_dram_holder_beats_a_slow_remote_reload(tmp_path, monkeypatch):
    """1 GiB/s to the remote store. At 0 s: server 1 (SSD, 2 + 2 = 4 s) beats a remote
    start on server 0 (2 + 4 = 6 s); the second request starts on server 0 (6 s, idle at
    6.5, asleep at 14.5); server 1's is idle at 4.5 and stops at 12.5. At 20 s: the wake
    would take 4 s, the start on server 1 3 s: it starts, TTFT 3 + 0.5."""
    offered = []
    offers = Sleepers.offers

    def spy(*args):
        offered.append(offers(*args))
        return offered[-1]

    monkeypatch.setattr(Sleepers, "offers", spy)
    sim = simulate(config(tmp_path, "1GiB/s"), ROWS, "startup-aware", check=True)
    assert offered[-1] == [Sleeping(server=0, instance=1, wake_s=4.0)]
    assert list(sim.table.server) == [1, 0, 1]
    assert list(sim.table.ttft_s) == [4.5, 6.5, 3.5]
    assert sim.table.estimate_s[2] == sim.table.startup_s[2] == 3.0
    assert sim.sleepers.wakes == {1: 0, 2: 0}


def test_a_fast_reload_beats_the_start(tmp_path):
    """4 GiB/s to the remote store. At 0 s: a remote start on server 0 (2 + 1 = 3 s)
    beats server 1's SSD (4 s); the second request starts on server 1 (4 s). Server 0's
    instance is idle at 3.5, asleep at 11.5. At 20 s: the wake takes 1 s, the start 3 s:
    it wakes, TTFT 1 + 0.5, the estimate the wake's."""
    sim = simulate(config(tmp_path, "4GiB/s"), ROWS, "startup-aware", check=True)
    assert list(sim.table.server) == [0, 1, 0]
    assert list(sim.table.ttft_s) == [3.5, 4.5, 1.5]
    assert sim.table.estimate_s[2] == sim.table.startup_s[2] == 1.0
    assert sim.sleepers.wakes == {1: 0, 2: 1}


@pytest.mark.parametrize("policy", ["locality", "random", "migration", "preemption"])
def test_the_other_policies_wake_first(tmp_path, policy):
    """A policy that does not weigh wakes is never asked while an engine of the model
    can wake: at 20 s the engine on server 0 wakes though its reload takes 4 s, TTFT
    4.5 (the request is recorded with the wake's estimate)."""
    sim = simulate(config(tmp_path, "1GiB/s"), ROWS, policy, check=True)
    assert sim.table.server[2] == 0 and sim.table.ttft_s[2] == 4.5
    assert sim.table.estimate_s[2] == sim.table.startup_s[2] == 4.0
    assert sim.sleepers.wakes == {1: 0, 2: 1}


def test_startup_aware_pre_warms_by_waking(tmp_path):
    """The histogram keep-alive's periodic case (`test_keep_alive`): every 600 s, one
    server whose DRAM holds a. From the third idle time on, each instance stops at once
    (here: sleeps, its weights in DRAM) and a pre-warm comes 486 s later. `locality`
    pre-warms by starting from DRAM (2 + 1 s); `startup-aware` wakes the sleeping engine
    instead (1 s over PCIe), and every later request finds it warm all the same."""
    path = tmp_path / "periodic.toml"
    path.write_text(
        'sleep = {level = 1, gpu_memory = "2GiB"}\n'
        + CLUSTER.format(keep_alive="histogram:min_samples=3,sleep=1000")
        + MODEL.format(name="a")
    )
    for policy, wakes, dram_loads in (("locality", 0, 5), ("startup-aware", 5, 0)):
        sim = simulate(read_config(path), PERIODIC, policy, check=True)
        assert list(sim.table.ttft_s) == [4.5] + [0.5] * 7
        assert (sim.prewarms, sim.prewarm_hits) == (5, 4)
        assert sim.sleepers.wakes == {1: wakes, 2: 0}
        assert sim.loads_by_tier[Tier.DRAM] == dram_loads
        ready = sim.cluster.log.frame().eval("ready_s - allocated_s").dropna()
        assert list(ready)[1:] == [1.0 if wakes else 3.0] * 5


def test_a_wake_of_an_engine_not_offered_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(StartupAware, "place", lambda self, request, view: Wake(0, 99))
    with pytest.raises(RuntimeError, match="instance 99 on server 0 is not a sleeping a"):
        simulate(config(tmp_path, "1GiB/s"), ROWS, "startup-aware")
