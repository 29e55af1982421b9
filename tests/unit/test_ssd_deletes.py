"""Deleting a checkpoint from the SSD holds the disk (`ssd_delete_s_per_gb`), checked by
hand on TINY's numbers: 4 GiB checkpoints, a 2 s start-up, SSD reads at 2 GiB/s per
server, the network at 1 GiB/s, two GPUs a server."""

import re

from conftest import simulate
from test_storage_tiers import STARTUP, tiers_config

from sim.config import read_config

# Deleting a 4 GiB checkpoint (2**32 bytes) holds the disk 1 s: 2 GiB of the SSD's link.
ONE_SECOND = 1e9 / 2**32


def deleting(tmp_path, seconds_per_gb: float, **keys):
    """`tiers_config` with downloads on and deletions costing `seconds_per_gb`."""
    tiers_config(tmp_path, download=True, **keys)
    path = tmp_path / "tiny.toml"
    text = re.sub(
        r"(servers_per_host = \d+)", rf"\1\nssd_delete_s_per_gb = {seconds_per_gb!r}",
        path.read_text(),
    )  # fmt: skip
    path.write_text(text)
    return read_config(path)


def test_an_eviction_shares_the_ssd_with_the_load_that_caused_it(tmp_path):
    # b loads from server 0's SSD 2-4; a downloads 2-6, is admitted to the SSD that holds
    # one checkpoint, and evicts b: the deletion's 2 GiB of link and a's load halve the
    # SSD until 8 (a has read 2 GiB), a's last 2 GiB at 2 GiB/s end at 9. Free, it ends at 8.
    rows = [(0.0, "b", 512, 1), (0.0, "a", 512, 1)]
    costly = simulate(deleting(tmp_path, ONE_SECOND, ssd="4GiB", ssd_b="[0]"), rows, check=True)
    free = simulate(deleting(tmp_path, 0.0, ssd="4GiB", ssd_b="[0]"), rows, check=True)
    assert list(costly.table.frame()["tier"]) == ["ssd", "remote"]
    assert list(free.table.startup_s) == [STARTUP + 2.0, STARTUP + 4.0 + 2.0]
    assert list(costly.table.startup_s) == [STARTUP + 2.0, STARTUP + 4.0 + 3.0]
    server = costly.cluster.servers[0]
    assert "a" in server.ssd and "b" not in server.ssd


def test_a_downloaded_copy_the_ssd_cannot_hold_is_deleted_after_its_load(tmp_path):
    # a downloads 2-6 and loads the copy its 2 GiB SSD cannot admit 6-8; then the copy
    # is deleted, holding the SSD 8-9 with no one waiting on it.
    config = deleting(tmp_path, ONE_SECOND, ssd="2GiB", keep_alive=0.0)
    sim = simulate(config, [(0.0, "a", 512, 1)], check=True)
    assert sim.table.startup_s[0] == STARTUP + 4.0 + 2.0  # the deletion follows the load
    assert "a" not in sim.cluster.servers[0].ssd
    free = deleting(tmp_path, 0.0, ssd="2GiB", keep_alive=0.0)
    free = simulate(free, [(0.0, "a", 512, 1)], check=True)
    assert free.clock.now < 9.0 == sim.clock.now  # the run ends with the deletion


def test_no_cost_changes_nothing_and_a_profile_sets_it(tmp_path):
    config = deleting(tmp_path, 0.0)
    assert config.servers[0].ssd_delete_s_per_gb == 0.0
    assert deleting(tmp_path, 0.25).servers[0].ssd_delete_s_per_gb == 0.25
