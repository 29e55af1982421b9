"""A host's shared disk (`host_disk`) and remote starts that download to SSD, then load
from it (`remote_download`), checked by hand on TINY's numbers: 4 GiB checkpoints, a 2 s
start-up, SSD reads at 2 GiB/s per server, PCIe at 4 GiB/s."""

import math
import re

import pytest
from conftest import GiB, simulate, tiny_config
from test_sleep import config as sleepy

from sim.config import read_config
from sim.engine import invariants
from sim.engine.invariants import InvariantError
from sim.model import transfers
from sim.model.clock import Clock
from sim.model.cluster import Cluster
from sim.model.peer.tier import _tier_rate
from sim.model.transfers import ServerLinks
from thaw_kernel.errors import InputError

STARTUP = 2.0


def tiers_config(
    tmp_path,
    *,
    host_disk: str | None = None,
    host_disk_shared: str | None = None,
    download: bool = False,
    ssd: str = "64GiB",
    **tiny,
):
    """TINY (`tiny_config`'s keywords) with a host disk (its rate under two or more
    transfers, if given) and the download switch."""
    tiny_config(tmp_path, **tiny)
    path = tmp_path / "tiny.toml"
    text = path.read_text().replace('ssd = "64GiB"', f'ssd = "{ssd}"')
    for key, value in (("host_disk_shared", host_disk_shared), ("host_disk", host_disk)):
        if value is not None:
            text = re.sub(r"(servers_per_host = \d+)", rf'\1\n{key} = "{value}"', text)
    path.write_text(f"remote_download = {str(download).lower()}\n{text}")
    return read_config(path)


def both_on_their_ssds(config, policy="locality"):
    """a on server 0's SSD and b on server 1's, started together."""
    return simulate(config, [(0.0, "a", 512, 1), (0.0, "b", 512, 1)], policy, check=True)


# --- the host disk ---


def test_two_ssd_loads_on_one_host_share_its_disk(tmp_path):
    config = tiers_config(
        tmp_path, host_disk="1GiB/s", count=2, servers_per_host=2, ssd_a="[0]", ssd_b="[1]"
    )
    sim = both_on_their_ssds(config)
    # Each server's 2 GiB/s SSD link is free, the host's 1 GiB/s disk is halved: 8 s each.
    assert list(sim.table.server) == [0, 1]
    assert list(sim.table.startup_s) == [STARTUP + 8.0] * 2


def test_servers_on_hosts_of_their_own_do_not_share_a_disk(tmp_path):
    config = tiers_config(
        tmp_path, host_disk="1GiB/s", count=2, servers_per_host=1, ssd_a="[0]", ssd_b="[1]"
    )
    # Each load alone on its host's 1 GiB/s disk, below the server's 2 GiB/s: 4 s each.
    assert list(both_on_their_ssds(config).table.startup_s) == [STARTUP + 4.0] * 2


def test_without_a_host_disk_a_host_s_servers_read_their_ssds_apart(tmp_path):
    config = tiers_config(tmp_path, count=2, servers_per_host=2, ssd_a="[0]", ssd_b="[1]")
    assert list(both_on_their_ssds(config).table.startup_s) == [STARTUP + 2.0] * 2


def test_a_streamed_remote_load_does_not_cross_the_disk(tmp_path):
    config = tiers_config(tmp_path, host_disk="1GiB/s", count=2, servers_per_host=2, ssd_b="[1]")
    sim = simulate(config, [(0.0, "a", 512, 1), (0.0, "b", 512, 1)], "locality", check=True)
    # a streams over server 0's 1 GiB/s network alone; b has the 1 GiB/s disk alone.
    assert list(sim.table.frame()["tier"]) == ["remote", "ssd"]
    assert list(sim.table.startup_s) == [STARTUP + 4.0] * 2


def shared_disk(tmp_path):
    """Two servers on one host, a on server 0's SSD and b on server 1's, whose disk reads
    2 GiB/s for one transfer and 1 GiB/s for two or more together."""
    return tiers_config(
        tmp_path,
        host_disk="2GiB/s",
        host_disk_shared="1GiB/s",
        count=2,
        servers_per_host=2,
        ssd_a="[0]",
        ssd_b="[1]",
    )


def test_a_disk_that_reads_less_under_two_loads_gives_each_half_its_shared_rate(tmp_path):
    config = shared_disk(tmp_path)
    # Together the two 4 GiB loads read 1 GiB/s: 8 s each, where one alone reads 2 GiB/s.
    assert list(both_on_their_ssds(config).table.startup_s) == [STARTUP + 8.0] * 2
    alone = simulate(config, [(0.0, "a", 512, 1)], "locality", check=True)
    assert list(alone.table.startup_s) == [STARTUP + 2.0]


def test_the_shared_rate_holds_only_while_two_loads_overlap(tmp_path):
    config = shared_disk(tmp_path)
    rows = [(0.0, "a", 512, 1), (1.0, "b", 512, 1)]
    sim = simulate(config, rows, "locality", check=True)
    # a reads alone from 2 s to 3 s (2 GiB), then both at 0.5 GiB/s: a's last 2 GiB end
    # at 7 s, when b has 2 GiB left, read alone at 2 GiB/s by 8 s. Each loads for 5 s.
    assert list(sim.table.server) == [0, 1]
    assert list(sim.table.startup_s) == [STARTUP + 5.0] * 2


def test_the_estimates_see_the_shared_rate(tmp_path):
    rows = [(0.0, "a", 512, 1), (1.0, "b", 512, 1)]
    sim = simulate(shared_disk(tmp_path), rows, "startup-aware", check=True)
    # For b, at 1 s: from server 1's SSD beside a's load, 2 + 5 s (above); streamed from
    # the store onto server 0 over its 1 GiB/s network, clear of the disk, 2 + 4 s.
    # (Sharing 2 GiB/s instead, server 1 would have taken 2 + 3 s and won.)
    assert list(sim.table.frame()["tier"]) == ["ssd", "remote"]
    assert sim.table.estimate_s[1] == sim.table.startup_s[1] == STARTUP + 4.0


def test_a_shared_rate_equal_to_the_disk_s_changes_nothing(tmp_path):
    rows = [(0.0, "a", 512, 30), (0.5, "b", 512, 4), (1.0, "a", 256, 8), (40.0, "b", 64, 2)]
    runs = []
    for shared in (None, "1GiB/s"):
        config = tiers_config(
            tmp_path, host_disk="1GiB/s", host_disk_shared=shared, count=2, download=True
        )
        sim = simulate(config, rows, "startup-aware", check=True)
        runs.append((sim.table.frame(), sim.cluster.log.frame()))
    assert runs[0][0].equals(runs[1][0]) and runs[0][1].equals(runs[1][1])


def test_a_shared_rate_without_a_host_disk_is_refused(tmp_path):
    with pytest.raises(InputError, match=re.escape("servers[0].host_disk_shared: needs host_disk")):
        tiers_config(tmp_path, host_disk_shared="1GiB/s")


def test_a_disk_no_load_can_saturate_changes_nothing(tmp_path):
    rows = [(0.0, "a", 512, 30), (0.5, "b", 512, 4), (1.0, "a", 256, 8), (40.0, "b", 64, 2)]
    runs = []
    for disk in (None, "64GiB/s"):
        config = tiers_config(tmp_path, host_disk=disk, count=2, ssd_a="[0]", ssd_b="[0]")
        sim = simulate(config, rows, "startup-aware", check=True)
        runs.append((sim.table.frame(), sim.cluster.log.frame()))
    assert runs[0][0].equals(runs[1][0]) and runs[0][1].equals(runs[1][1])


# --- downloading to SSD, then loading from it ---


def test_a_remote_start_downloads_then_loads_from_ssd(tmp_path):
    config = tiers_config(tmp_path, download=True)
    sim = simulate(config, [(0.0, "a", 512, 1)], "startup-aware", check=True)
    # 4 GiB over the 1 GiB/s network, then 4 GiB from SSD at 2 GiB/s.
    assert sim.table.startup_s[0] == sim.table.estimate_s[0] == STARTUP + 4.0 + 2.0
    log = sim.cluster.log.frame()
    assert list(log["tier"]) == ["remote"] and sim.loads_by_tier["remote"] == 1
    assert (log["load_s"][0], log["download_s"][0]) == (6.0, 4.0)
    server = sim.cluster.servers[0]
    assert "a" in server.ssd and "a" in server.dram


def test_the_log_times_a_level_2_wake_s_reload_and_no_asleep_period(tmp_path):
    # From SSD 2 -> 4 s; asleep at 12.5; woken at 20, reloading from DRAM in 1 s.
    config = sleepy(tmp_path, level=2, ssd_a="[0]")
    sim = simulate(config, [(0.0, "a", 512, 1), (20.0, "a", 512, 1)], check=True)
    log = sim.cluster.log.frame()[:3]
    assert list(log["tier"]) == ["ssd", "ssd", "dram"] and list(log["asleep"]) == [0, 1, 0]
    assert log["load_s"][0] == 2.0 and math.isnan(log["load_s"][1]) and log["load_s"][2] == 1.0
    assert log["download_s"].isna().all()


def test_a_download_the_ssd_cannot_hold_is_still_loaded_then_dropped(tmp_path):
    config = tiers_config(tmp_path, download=True, ssd="2GiB")
    sim = simulate(config, [(0.0, "a", 512, 1)], check=True)
    assert sim.table.startup_s[0] == STARTUP + 4.0 + 2.0
    server = sim.cluster.servers[0]
    assert "a" not in server.ssd and "a" in server.dram


def test_without_the_switch_a_remote_start_streams(tmp_path):
    sim = simulate(tiers_config(tmp_path), [(0.0, "a", 512, 1)], check=True)
    log = sim.cluster.log.frame()
    assert sim.table.startup_s[0] == STARTUP + 4.0
    assert log["load_s"][0] == 4.0 and math.isnan(log["download_s"][0])


def test_a_download_writes_on_the_host_disk_beside_an_ssd_load(tmp_path):
    # One GPU per server: b (on server 1's SSD) starts at 0, loading from t = 2; a, remote,
    # must go to server 0, downloading from t = 3 over its 2 GiB/s network. 2-3: b alone at
    # 2 GiB/s (2 GiB left). 3-5: the 2 GiB/s disk halved, b ends at 5. 5-6: the download's
    # last 2 GiB at 2 GiB/s. 6-8: a's 4 GiB from SSD at 2 GiB/s.
    config = tiers_config(
        tmp_path,
        host_disk="2GiB/s",
        download=True,
        network="2GiB/s",
        count=2,
        gpus=1,
        servers_per_host=2,
        ssd_b="[1]",
    )
    sim = simulate(config, [(0.0, "b", 512, 1), (1.0, "a", 512, 1)], "startup-aware", check=True)
    t, log = sim.table, sim.cluster.log.frame()
    assert list(t.server) == [1, 0] and list(t.frame()["tier"]) == ["ssd", "remote"]
    assert list(t.startup_s) == [STARTUP + 3.0, 7.0]
    assert list(log["load_s"]) == [3.0, 5.0]
    assert math.isnan(log["download_s"][0]) and log["download_s"][1] == 3.0
    # a's decision saw b's load coming and priced the shared disk: exact.
    assert t.estimate_s[1] == 7.0


def test_the_estimate_sees_a_download_s_load_from_ssd_coming(tmp_path):
    # a downloads on server 0 from t = 2 to 6 (its 1 GiB/s network; the 2 GiB/s disk has
    # room); b, decided at t = 1, loads from server 1's SSD from t = 3 at the disk's other
    # 1 GiB/s. At 6 a's load from SSD takes half the disk: b's last GiB at 1 GiB/s.
    config = tiers_config(
        tmp_path, host_disk="2GiB/s", download=True, count=2, gpus=1, servers_per_host=2,
        ssd_b="[1]",
    )  # fmt: skip
    sim = simulate(config, [(0.0, "a", 512, 1), (1.0, "b", 512, 1)], "startup-aware", check=True)
    t = sim.table
    assert list(t.server) == [0, 1]
    assert t.startup_s[1] == t.estimate_s[1] == STARTUP + 4.0
    # a: 1 GiB from SSD while b ends (6-7), its last 3 GiB at 2 GiB/s.
    assert t.startup_s[0] == STARTUP + 4.0 + 1.0 + 1.5


def test_the_peer_tier_compares_with_the_rate_of_the_phases(tmp_path):
    config = tiers_config(
        tmp_path, host_disk="1GiB/s", download=True, network="1GiB/s", ssd_a="[0]"
    )
    cluster = Cluster(config, Clock())
    server = cluster.servers[0]
    assert _tier_rate(server, config.models["a"]) == 1 * GiB  # the disk below the SSD link
    # b downloads at 1 GiB/s, then reads at 1 GiB/s: 8 s for 4 GiB.
    assert _tier_rate(server, config.models["b"]) == 0.5 * GiB


def test_a_chain_of_flows_is_priced_phase_after_phase():
    links = ServerLinks(Clock(), {"net": 4.0, "disk": 2.0})
    links.start(1.0, ("disk",), math.inf, lambda: None)  # 1 B in flight on the disk
    # The first phase's 2 B share the disk with it (1 B/s each) until t = 1, then take all
    # of it (2 B/s, below the net's 4) until 1.5; then 4 B over the disk alone at 2 B/s.
    phases = ((2.0, ("net", "disk"), math.inf), (4.0, ("disk",), 9.0))
    assert links.predict_chain_s(phases, 0.0) == 1.5 + 2.0


# --- the auditor ---


def test_an_allocation_that_is_not_max_min_is_caught(tmp_path, monkeypatch):
    def halved(flows, capacity):
        return [r / 2 for r in transfers.max_min_rates(flows, capacity)]

    # The links' sharing rule, max-min by default, made to give half.
    monkeypatch.setattr(transfers.ServerLinks.__init__, "__defaults__", (halved, None))
    config = tiers_config(tmp_path, host_disk="1GiB/s", count=2, servers_per_host=2, ssd_a="[0]")
    with pytest.raises(InvariantError, match="below its cap"):
        simulate(config, [(0.0, "a", 512, 1)], check=True)


def test_a_host_s_links_are_audited_once(tmp_path, monkeypatch):
    seen = []
    check = invariants._check_links
    monkeypatch.setattr(
        invariants, "_check_links", lambda sim, server: (seen.append(server.id), check(sim, server))
    )
    config = tiers_config(tmp_path, host_disk="1GiB/s", count=3, servers_per_host=2)
    simulate(config, [(0.0, "a", 512, 1)], check=True)
    assert set(seen) == {0, 2}  # two hosts: servers 0 and 1, and server 2


# --- the keys ---


def test_absent_keys_leave_the_resolved_config_as_it_was(tmp_path):
    config = tiny_config(tmp_path)
    assert config.servers[0].host_disk == 0.0 and not config.remote_download
    assert "host_disk" not in config.to_toml() and "remote_download" not in config.to_toml()


def test_given_keys_round_trip(tmp_path):
    config = tiers_config(tmp_path, host_disk="1GiB/s", host_disk_shared="2GiB/s", download=True)
    assert config.servers[0].host_disk == GiB and config.remote_download
    assert config.servers[0].host_disk_shared == 2 * GiB
    resolved = tmp_path / "resolved.toml"
    resolved.write_text(config.to_toml())
    assert read_config(resolved) == config


@pytest.mark.parametrize(
    ("host_disk", "download", "message"),
    [
        ("0GB/s", "false", "servers[0].host_disk: expected a positive bandwidth"),
        ("2000000TB/s", "false", "servers[0].host_disk: expected a bandwidth from"),
        ("1GB/s", '"yes"', "remote_download: expected true or false"),
    ],
)
def test_bad_values_name_the_key(tmp_path, host_disk, download, message):
    tiers_config(tmp_path, host_disk="3GiB/s")
    path = tmp_path / "tiny.toml"
    text = path.read_text().replace('"3GiB/s"', f'"{host_disk}"')
    path.write_text(text.replace("remote_download = false", f"remote_download = {download}"))
    with pytest.raises(InputError, match=re.escape(message)):
        read_config(path)
