"""A model's floor of instances (`min_instances`), checked by hand on one server of two
GPUs: started as the run begins, the last ones never expire, the others do.

As in test_keep_alive.py: a 4 GiB checkpoint on the server's SSD, 2 s of start-up and
2 s of load from SSD (2 GiB/s), 1 s from DRAM (4 GiB/s over one GPU's PCIe); a
512-token prompt prefills in 0.5 s. The keep-alive is a fixed 10 s.
"""

import pandas as pd
import pytest

from sim.config import read_config
from sim.engine.simulator import Simulation
from thaw_kernel import seeds
from thaw_kernel.errors import InputError

CLUSTER = """
keep_alive_s = 10.0
instance_startup_s = 2.0

[[servers]]
name = "one"
count = 1
gpus = 2
gpu_memory = "16GiB"
dram = "64GiB"
ssd = "64GiB"
ssd_read = "2GiB/s"
network = "1GiB/s"
pcie = "4GiB/s"

[models.a]
weights = "4GiB"
gpus = 1
prefill_tokens_per_s = 1024.0
decode_step_s = 0.125
max_batch = 1
ssd_servers = [0]
min_instances = {floor}
"""


def run(tmp_path, floor, rows):
    path = tmp_path / "cluster.toml"
    path.write_text(CLUSTER.format(floor=floor))
    trace = pd.DataFrame(rows, columns=["arrival_s", "model", "input_tokens", "output_tokens"])
    sim = Simulation(read_config(path), trace, "locality", seeds.rng(0, "policy"), check=True)
    sim.run()
    return sim


def test_the_floor_is_warm_before_the_first_request(tmp_path):
    # Started at 0: warm at 4 (2 s, then 2 s from SSD), and kept: the request at 30 finds it.
    sim = run(tmp_path, 1, [(30.0, "a", 512, 1)])
    assert list(sim.table.tier) == [0] and list(sim.table.ttft_s) == [0.5]  # 0: warm
    assert sim.prewarms == 1 and sim.prewarm_hits == 1
    # Held from 0 to the run's end at 30.5: the floor never expires.
    assert sim.cluster.gpu_seconds == 30.5


def test_instances_above_the_floor_expire_and_the_last_one_stays(tmp_path):
    # Two requests at 30: the first takes the floor instance (idle again at 30.5), the
    # second starts one on the other GPU from DRAM (the floor's load filled it): ready at
    # 33, first token at 33.5. At 30.5 two are live: the floor instance gets its 10 s and
    # stops at 40.5; the other, idle at 33.5, reaches its 10 s at 43.5 as the last one,
    # and is kept until the run ends there.
    sim = run(tmp_path, 1, [(30.0, "a", 512, 1), (30.0, "a", 512, 1)])
    assert list(sim.table.ttft_s) == [0.5, 3.5]
    assert sim.cluster.gpu_seconds == 40.5 + (43.5 - 30.0)


def test_without_a_floor_nothing_starts_before_a_request(tmp_path):
    sim = run(tmp_path, 0, [(30.0, "a", 512, 1)])
    assert list(sim.table.ttft_s) == [4.5] and sim.prewarms == 0


def test_a_floor_the_cluster_has_not_the_gpus_for_is_refused_naming_the_key(tmp_path):
    with pytest.raises(InputError, match=r"models\.a\.min_instances: .* 3 GPUs, the cluster has 2"):
        run(tmp_path, 3, [(30.0, "a", 512, 1)])


def test_a_negative_floor_is_refused_naming_the_key(tmp_path):
    with pytest.raises(InputError, match=r"models\.a\.min_instances"):
        run(tmp_path, -1, [(30.0, "a", 512, 1)])
