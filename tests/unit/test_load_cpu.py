"""A load's CPU on the host's cores (`load_cpu_s_per_gb`, `download_cpu_s_per_gb`),
checked by hand on TINY's numbers: 4 GiB checkpoints, a 2 s start-up, SSD reads at 2 GiB/s
per server, a 1 GiB/s network, PCIe at 4 GiB/s."""

import re

import pytest
from conftest import GiB, simulate
from test_storage_tiers import tiers_config
from timeline import check_timeline

from sim.config import read_config
from thaw_kernel.errors import InputError

STARTUP = 2.0
GB_PER_CHECKPOINT = 4 * GiB / 1e9  # 4.29 GB


def cpu_config(
    tmp_path, *, load_cpu: float = 0.0, download_cpu: float = 0.0, engine: str = "", **keys
):
    """TINY through `tiers_config` (its keywords), its servers' loads from SSD and
    downloads taking `load_cpu` and `download_cpu` CPU-seconds per GB; `engine`: the
    stages of an engine both models run."""
    config_keys = {"model_keys": 'engine = "e"', "extra": f"[engines.e]\n{engine}\n"}
    tiers_config(tmp_path, **keys, **(config_keys if engine else {}))
    path = tmp_path / "tiny.toml"
    cpu = f"load_cpu_s_per_gb = {load_cpu}\ndownload_cpu_s_per_gb = {download_cpu}"
    path.write_text(re.sub(r"(servers_per_host = \d+)", rf"\1\n{cpu}", path.read_text()))
    return read_config(path)


def test_alone_a_load_s_cpu_never_lengthens_it(tmp_path):
    # 2.15 CPU-seconds over the 2 s the bytes take: 1.07 cores of the host's 32.
    config = cpu_config(tmp_path, load_cpu=0.5, ssd_a="[0]")
    sim = simulate(config, [(0.0, "a", 512, 1)], "startup-aware", check=True)
    assert sim.table.startup_s[0] == pytest.approx(STARTUP + 2.0, rel=1e-12)
    assert sim.table.estimate_s[0] == pytest.approx(sim.table.startup_s[0], rel=1e-12)


def test_a_load_the_cores_cannot_keep_up_with_is_cpu_bound(tmp_path):
    # 4.29 CPU-seconds on one core: the load's bytes wait for its CPU work.
    config = cpu_config(tmp_path, load_cpu=1.0, host_cores=1, ssd_a="[0]")
    sim = simulate(config, [(0.0, "a", 512, 1)], "startup-aware", check=True)
    assert sim.table.startup_s[0] == pytest.approx(STARTUP + GB_PER_CHECKPOINT, rel=1e-12)
    assert sim.table.estimate_s[0] == pytest.approx(sim.table.startup_s[0], rel=1e-12)
    assert sim.cluster.log.frame()["load_s"][0] == pytest.approx(GB_PER_CHECKPOINT, rel=1e-12)


def test_two_loads_on_one_host_share_its_cores(tmp_path):
    # Each load's 1.07 CPU-seconds at its solo pace would take 0.54 cores; two on one core
    # get half each, so each takes 2.15 s, not its bytes' 2 s.
    config = cpu_config(
        tmp_path, load_cpu=0.25, host_cores=1, count=2, servers_per_host=2, ssd_a="[0]", ssd_b="[1]"
    )
    sim = simulate(config, [(0.0, "a", 512, 1), (0.0, "b", 512, 1)], "locality", check=True)
    assert list(sim.table.server) == [0, 1]
    expected = STARTUP + GB_PER_CHECKPOINT / 2
    assert list(sim.table.startup_s) == pytest.approx([expected] * 2, rel=1e-12)


def test_a_load_s_cpu_and_a_start_up_s_stage_share_a_core_in_proportion(tmp_path):
    # An engine whose 1 CPU-second stage runs beside its load; one core. The load's CPU
    # work W = 1.07 CPU-seconds keeps pace with its bytes (2 s): cap = W / 2 = 0.54 cores.
    # Together they ask 1 + cap cores of one: each gets its cap over 1 + cap, so the
    # stage ends at 1 + cap, when the load has done cap of its CPU work; then the load's
    # CPU runs alone at its cap, its other cap CPU-seconds ending at 2 + cap (after its
    # bytes, at 2). Max-min would give the load its cap and the stage ending at 2.16 s.
    engine = 'stages = [[{name = "cpu", cpu_seconds = 1.0}, {name = "load"}]]'
    config = cpu_config(tmp_path, load_cpu=0.25, host_cores=1, ssd_a="[0]", engine=engine)
    sim = simulate(config, [(0.0, "a", 512, 1)], "locality", check=True)
    cap = 0.25 * GB_PER_CHECKPOINT / 2.0
    assert sim.table.startup_s[0] == pytest.approx(2.0 + cap, rel=1e-12)


# A third model whose engine runs 1 CPU-second before its load, its checkpoint on
# server 2's SSD.
C_MODEL = """
[models.c]
weights = "4GiB"
gpus = 1
prefill_tokens_per_s = 1024.0
decode_step_s = 0.125
max_batch = 4
ssd_servers = [2]
engine = "cpu"

[engines.cpu]
stages = [{name = "cpu", cpu_seconds = 1.0}, {name = "load"}]
"""


def test_a_load_s_cpu_keeps_pace_with_its_bytes_on_a_shared_disk(tmp_path):
    # Three servers on one host of 1.5 cores and one 1 GiB/s disk. a and b load from 2 s,
    # sharing the disk (0.5 GiB/s each), so each one's CPU work takes 0.25 s/GB x 0.54
    # GB/s = 0.13 cores, not its solo 0.54: c's stage, begun at 2 s beside them, gets its
    # whole core (1.5 - 0.27) and ends at 3 s. Then the three loads share the disk: 12 GiB
    # in all from 2 s, a and b ending first.
    config = cpu_config(
        tmp_path,
        load_cpu=0.25,
        host_cores=1.5,
        count=3,
        servers_per_host=3,
        host_disk="1GiB/s",
        ssd_a="[0]",
        ssd_b="[1]",
        extra=C_MODEL,
    )
    rows = [(0.0, "a", 512, 1), (0.0, "b", 512, 1), (2.0, "c", 512, 1)]
    sim = simulate(config, rows, "locality", check=True)
    assert list(sim.table.server) == [0, 1, 2]
    # a and b: 0.5 GiB each by 3 s, then a third of the disk for their 3.5 GiB left.
    ab_end = 3.0 + 3.5 * 3
    assert list(sim.table.startup_s[:2]) == pytest.approx([ab_end] * 2, rel=1e-12)
    assert sim.table.startup_s[2] == pytest.approx(14.0 - 2.0, rel=1e-12)


def test_a_download_takes_its_cpu_and_then_the_load_its_own(tmp_path):
    # 4 GiB over the 1 GiB/s network (4 s) at 0.25 s/GB: 1.07 CPU-seconds at 0.27 cores;
    # then from SSD (2 s) at 1 s/GB: 4.29 CPU-seconds on the host's 2 cores at its cap of
    # 2.15: 2.15 s.
    config = cpu_config(tmp_path, load_cpu=1.0, download_cpu=0.25, host_cores=2, download=True)
    sim = simulate(config, [(0.0, "a", 512, 1)], "startup-aware", check=True)
    expected = STARTUP + 4.0 + GB_PER_CHECKPOINT / 2
    assert sim.table.startup_s[0] == pytest.approx(expected, rel=1e-12)
    log = sim.cluster.log.frame()
    assert log["download_s"][0] == pytest.approx(4.0, rel=1e-12)
    assert sim.table.estimate_s[0] == pytest.approx(expected, rel=1e-12)


def test_no_cpu_keys_change_nothing(tmp_path):
    rows = [(0.0, "a", 512, 30), (0.5, "b", 512, 4), (1.0, "a", 256, 8), (40.0, "b", 64, 2)]
    runs = []
    for cpu in (False, True):
        keys = {"host_disk": "1GiB/s", "count": 2, "servers_per_host": 2, "ssd_a": "[0]"}
        config = cpu_config(tmp_path, **keys) if cpu else tiers_config(tmp_path, **keys)
        sim = simulate(config, rows, "startup-aware", check=True)
        runs.append((sim.table.frame(), sim.cluster.log.frame()))
    assert runs[0][0].equals(runs[1][0]) and runs[0][1].equals(runs[1][1])


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("-1", "servers[0].load_cpu_s_per_gb: expected a non-negative number"),
        ("5000", "servers[0].load_cpu_s_per_gb: expected a number from 0 to 1000"),
        ('"1s"', "servers[0].load_cpu_s_per_gb: expected a number, got '1s'"),
    ],
)
def test_bad_values_name_the_key(tmp_path, value, message):
    cpu_config(tmp_path, load_cpu=0.5)
    path = tmp_path / "tiny.toml"
    path.write_text(
        path.read_text().replace("load_cpu_s_per_gb = 0.5", f"load_cpu_s_per_gb = {value}")
    )
    with pytest.raises(InputError, match=re.escape(message)):
        read_config(path)


def test_the_keys_round_trip(tmp_path):
    config = cpu_config(tmp_path, load_cpu=0.5, download_cpu=0.25)
    assert (config.servers[0].load_cpu_s_per_gb, config.servers[0].download_cpu_s_per_gb) == (
        0.5,
        0.25,
    )
    resolved = tmp_path / "resolved.toml"
    resolved.write_text(config.to_toml())
    assert read_config(resolved) == config


def test_a_prefill_behind_a_load_its_cpu_outlasts_waits_for_the_load(tmp_path):
    # Execute-while-load on a load whose bytes end at 2 s and its CPU at 4.29 s: the last
    # layer is usable only when the load ends (it crashed: the first token was due before
    # the instance was ready, a negative delay). Prefill 0.5 s of 32 layers.
    engine = 'stages = [{name = "load"}]\nexecute_while_load = true'
    config = cpu_config(tmp_path, load_cpu=1.0, host_cores=1, ssd_a="[0]", engine=engine)
    sim = simulate(config, [(0.0, "a", 512, 1)], check=True)
    assert sim.table.ttft_s[0] == pytest.approx(GB_PER_CHECKPOINT + 0.5 / 32, rel=1e-12)
    check_timeline(sim.table.frame(), sim.cluster.log.frame(), config)
