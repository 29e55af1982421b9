"""Peer loading and multicast chains, checked by hand (docs/peer-loading.md).

The TINY cluster (conftest) with `peer_loading = true`: checkpoints of 4 GiB, PCIe
4 GiB/s per GPU, storage network 1 GiB/s, start-up 2 s, 512-token prefills 0.5 s; the
peer links are chosen per test, all exact in binary floating point.
"""

import re

import pandas as pd
import pytest
from conftest import TINY, simulate
from timeline import check_timeline

from sim.config import read_config
from sim.engine.simulator import Simulation
from sim.model.overlap import first_token_at
from thaw_kernel import seeds
from thaw_kernel.errors import InputError

STARTUP, PREFILL = 2.0, 0.5
REMOTE = STARTUP + 4.0  # 4 GiB over the 1 GiB/s storage network


def peer_config(
    tmp_path,
    *,
    count=1,
    gpus=2,
    keep_alive=8.0,
    links="",
    top="peer_loading = true",
    ssd_a="[]",
    ssd_b="[]",
    network="1GiB/s",
    extra="",
    model_keys="",
):
    text = TINY.format(
        count=count,
        gpus=gpus,
        max_batch=1,  # a busy instance has no room: every request below starts one
        ssd_a=ssd_a,
        ssd_b=ssd_b,
        keep_alive=keep_alive,
        network=network,
        host_cores=32,
        model_keys=model_keys,
    )
    text = text.replace("host_cores = 32\n", f"host_cores = 32\n{links}\n")
    path = tmp_path / "peer.toml"
    path.write_text(f"{top}\n{text}{extra}")
    return read_config(path)


def test_a_load_on_the_sources_server_crosses_the_gpu_link(tmp_path):
    # Request 0 loads from remote (ready at 6) and decodes until 6.5 + 99 * 0.125; request 1
    # at 10 finds it busy: a new instance on the same server, from its GPUs at 8 GiB/s
    # (faster than DRAM's 4 GiB/s of PCIe): 4 GiB in 0.5 s.
    config = peer_config(tmp_path, links='gpu_link = "8GiB/s"\ncompute_network = "2GiB/s"')
    sim = simulate(config, [(0.0, "a", 512, 100), (10.0, "a", 512, 1)])
    t = sim.table
    assert t.ttft_s[1] == STARTUP + 0.5 + PREFILL
    assert sim.loads_by_tier == {"dram": 0, "ssd": 0, "remote": 1, "peer": 1}
    log = sim.cluster.log.frame().set_index("instance")
    assert list(log["tier"]) == ["remote", "peer"]
    assert (log.loc[1, "source"], log.loc[1, "chain"]) == (0, 0)
    assert (log.loc[0, "source"], log.loc[0, "chain"]) == (-1, -1)


def test_a_peer_slower_than_dram_is_not_used(tmp_path):
    # GPU link 4 GiB/s ties DRAM's PCIe: ties keep the tier.
    config = peer_config(tmp_path, links='gpu_link = "4GiB/s"\ncompute_network = "2GiB/s"')
    sim = simulate(config, [(0.0, "a", 512, 100), (10.0, "a", 512, 1)])
    assert sim.loads_by_tier == {"dram": 1, "ssd": 0, "remote": 1, "peer": 0}
    assert sim.table.ttft_s[1] == STARTUP + 1.0 + PREFILL


def chain_run(tmp_path, second_at, keep_alive=8.0):
    """Servers of one GPU: instance 0 warm on server 0 (busy until 13, its request's 53
    tokens), requests at 10 and `second_at` start on servers 1 and 2 from peers over the
    2 GiB/s compute network, faster than their 1 GiB/s remote loads."""
    config = peer_config(
        tmp_path,
        count=3,
        gpus=1,
        keep_alive=keep_alive,
        links='gpu_link = "8GiB/s"\ncompute_network = "2GiB/s"',
    )
    rows = [(0.0, "a", 512, 53), (10.0, "a", 512, 1), (second_at, "a", 512, 1)]
    return simulate(config, rows, check=True)


def test_a_chain_costs_the_source_one_pass(tmp_path):
    # Both loads begin at 12: the chain 0 -> 1 -> 2 crosses nic_out:0, nic_in:1, nic_out:1,
    # nic_in:2, one pass each, at 2 GiB/s: both hold 4 GiB at 14. (Two flows from the
    # source would share its NIC out at 1 GiB/s each and end at 16.)
    sim = chain_run(tmp_path, 10.0)
    t = sim.table
    assert list(t.server) == [0, 1, 2]
    assert t.ttft_s[1] == t.ttft_s[2] == STARTUP + 2.0 + PREFILL
    log = sim.cluster.log.frame().set_index("instance")
    assert list(log["source"]) == [-1, 0, 1] and list(log["chain"]) == [-1, 0, 0]


def test_a_late_joiner_takes_the_stream_where_it_is_and_wraps_around(tmp_path):
    # The second receiver joins at 13, when 2 GiB have streamed: it ends at s = 2 + 4 GiB,
    # at 15; the first at s = 4 GiB, at 14.
    sim = chain_run(tmp_path, 11.0)
    t = sim.table
    assert t.ttft_s[1] == 14.0 + PREFILL - 10.0
    assert t.ttft_s[2] == 15.0 + PREFILL - 11.0


def test_chain_members_stay_until_the_chain_ends(tmp_path):
    # Keep-alive 0.5 s. The source empties at 13 and receiver 1 at 14.5, but the chain
    # ends at 15 (receiver 2 done): both go idle then and expire at 15.5; receiver 2
    # serves until 15.5 and expires at 16.
    sim = chain_run(tmp_path, 11.0, keep_alive=0.5)
    log = sim.cluster.log.frame().set_index("instance")
    assert list(log["ended_s"]) == [15.5, 15.5, 16.0]
    assert list(log["end"]) == ["expired"] * 3


def test_startup_aware_prices_a_peer_load_exactly(tmp_path):
    config = peer_config(tmp_path, links='gpu_link = "8GiB/s"\ncompute_network = "2GiB/s"')
    sim = simulate(config, [(0.0, "a", 512, 100), (10.0, "a", 512, 1)], policy="startup-aware")
    t = sim.table
    assert t.estimate_s[1] == t.startup_s[1] == STARTUP + 0.5


def test_peer_loading_is_off_by_default(tmp_path):
    config = peer_config(tmp_path, top="")
    sim = simulate(config, [(0.0, "a", 512, 100), (10.0, "a", 512, 1)])
    assert sim.loads_by_tier == {"dram": 1, "ssd": 0, "remote": 1}
    assert "peer_loading" not in config.to_toml()


@pytest.mark.parametrize(
    ("top", "links", "where"),
    [
        ("", 'gpu_link = "8GiB/s"', "servers[0].gpu_link: only with peer_loading = true"),
        ("peer_loading = true", 'compute_network = "0GB/s"', "servers[0].compute_network"),
        ('peer_loading = "yes"', "", "peer_loading: expected true or false"),
    ],
)
def test_bad_peer_keys_are_refused_naming_the_key(tmp_path, top, links, where):
    with pytest.raises(InputError, match=re.escape(f"peer.toml: {where}")):
        peer_config(tmp_path, top=top, links=links)


def test_the_peer_links_default_when_omitted(tmp_path):
    group = peer_config(tmp_path).servers[0]
    assert group.gpu_link == 56.25e9 and group.compute_network == 100e9 / 8


def test_a_burst_forms_chains_and_the_books_hold(tmp_path):
    # 24 requests of one model within 3 s on 4 servers of 2 GPUs, after one warm-up: the
    # starts chain, receivers joining at different points of the stream; every event is
    # audited (pins, fabric links) and the timeline checked against the instance log.
    config = peer_config(tmp_path, count=4, links='gpu_link = "8GiB/s"\ncompute_network = "2GiB/s"')
    rows = [(0.0, "a", 512, 400)] + [(10.0 + k / 8, "a", 512, 40) for k in range(24)]
    sim = simulate(config, rows, check=True)
    log = sim.cluster.log.frame()
    peer = log[log["tier"] == "peer"]
    assert sim.loads_by_tier["peer"] == len(peer) == 7  # 8 GPUs, one the remote load's
    assert peer["chain"].value_counts().max() > 1  # a chain with several receivers
    check_timeline(sim.table.frame(), log, config)


def test_startup_aware_prices_joining_a_streaming_chain_exactly(tmp_path):
    config = peer_config(
        tmp_path, count=3, gpus=1, links='gpu_link = "8GiB/s"\ncompute_network = "2GiB/s"'
    )
    rows = [(0.0, "a", 512, 53), (10.0, "a", 512, 1), (11.0, "a", 512, 1)]
    sim = simulate(config, rows, policy="startup-aware", check=True)
    t = sim.table
    # The second joins the chain streaming since 12: 2 s start-up, then 4 GiB at 2 GiB/s.
    assert list(t.startup_s[1:]) == [4.0, 4.0]
    assert list(t.estimate_s[1:]) == [4.0, 4.0]


def test_an_idle_source_stays_until_its_chain_ends(tmp_path):
    # Instance 0 (server 0) serves one token and is idle from 6.5, to expire at 14.5. An
    # instance started on server 1 at 10 (as a pre-warm starts one) loads from it over the
    # compute network from 12 to 14: instance 0 leaves the idle list meanwhile and its
    # keep-alive (8 s) starts again at 14.
    config = peer_config(
        tmp_path, count=2, gpus=1, links='gpu_link = "8GiB/s"\ncompute_network = "2GiB/s"'
    )
    trace = pd.DataFrame(
        [(0.0, "a", 512, 1)], columns=["arrival_s", "model", "input_tokens", "output_tokens"]
    )
    sim = Simulation(config, trace, "locality", seeds.rng(0, "policy"), check=True)
    sim.clock.call_in(10.0, sim._launch, "a", 1)
    sim.run()
    log = sim.cluster.log.frame().set_index("instance")
    assert list(log["ready_s"]) == [6.0, 14.0] and list(log["source"]) == [-1, 0]
    assert list(log["ended_s"]) == [22.0, 22.0]


def test_a_migration_moves_to_an_instance_loaded_from_the_tiers(tmp_path):
    # test_migration.py's scenario: b busy on server 0, a's request at 10 migrates it to
    # server 1 (b on its SSD, 2 GiB/s). The compute network (4 GiB/s) would beat that SSD
    # from b's instance, but that instance is about to leave: the destination loads from
    # the SSD, and the run is the one without peer loading.
    rows = [(0.0, "b", 1024, 1000), (10.0, "a", 1024, 2)]
    keys = {"count": 2, "gpus": 1, "ssd_a": "[0]", "ssd_b": "[0, 1]", "network": "256MiB/s"}
    links = 'gpu_link = "8GiB/s"\ncompute_network = "4GiB/s"'
    on = simulate(peer_config(tmp_path, links=links, **keys), rows, "migration", check=True)
    off = simulate(peer_config(tmp_path, top="", **keys), rows, "migration")
    assert on.migrations == off.migrations == 1
    assert on.loads_by_tier == {**off.loads_by_tier, "peer": 0}
    assert list(on.table.ttft_s) == list(off.table.ttft_s)


def test_a_peer_loaded_engine_woken_names_no_peer(tmp_path):
    # a's second instance loads from the first's GPUs, sleeps after 1 s idle and is woken
    # at 20 s by a copy from DRAM: that row is no peer load, so it names no source.
    sleepy = 'keep_alive = "fixed:1,sleep=30"\nsleep = {level = 1, gpu_memory = "1GiB"}'
    links = 'gpu_link = "8GiB/s"\ncompute_network = "2GiB/s"'
    config = peer_config(tmp_path, top=f"peer_loading = true\n{sleepy}", links=links)
    rows = [(0.0, "a", 512, 400), (10.0, "a", 512, 1), (20.0, "a", 512, 1)]
    sim = simulate(config, rows, check=True)
    log = sim.cluster.log.frame()
    woken = log[~log["asleep"] & log["instance"].duplicated()]
    assert list(woken["tier"]) == ["dram"]
    assert list(woken["source"]) == [-1] and list(woken["chain"]) == [-1]
    check_timeline(sim.table.frame(), log, config)


# Execute-while-load down a chain: each model on an engine of a 2 s `init`, then the load,
# with the starting request's prefill pipelined behind the load.
EWL = """
[engines.e]
stages = [{name = "init", seconds = 2.0}, {name = "load"}]
execute_while_load = true
"""


def pipelining_config(tmp_path, layers=4, compute_network="2GiB/s", **keys):
    """`peer_config` (`keys` as given) with every model on the pipelining engine, of
    `layers` layers, and the peer links at `compute_network` between servers."""
    links = f'gpu_link = "8GiB/s"\ncompute_network = "{compute_network}"'
    model_keys = f'engine = "e"\nlayers = {layers}'
    return peer_config(tmp_path, links=links, extra=EWL, model_keys=model_keys, **keys)


def pipelined_chain_run(tmp_path, second_at):
    """`chain_run` with 2,048-token prompts (a 2 s prefill) on the pipelining engine."""
    config = pipelining_config(tmp_path, count=3, gpus=1)
    rows = [(0.0, "a", 512, 53), (10.0, "a", 2048, 1), (second_at, "a", 2048, 1)]
    return simulate(config, rows, check=True)


def test_a_receiver_from_the_streams_start_pipelines_as_a_load_from_a_tier(tmp_path):
    # Both join at 12 at s = 0 and hold 4 GiB at 14; their prefills (2 s, 4 layers) ran
    # behind the bytes: max(14 + 0.5, 12 + 2) = 14.5, where loading then prefilling ends
    # at 16.
    sim = pipelined_chain_run(tmp_path, 10.0)
    assert sim.loads_by_tier["peer"] == 2
    assert list(sim.table.ttft_s[1:]) == [4.5, 4.5]


def test_a_receiver_joining_mid_stream_gets_the_first_layers_last(tmp_path):
    # The second receiver joins at 13, halfway through the stream (offset 0.5): layers 3
    # and 4 arrive from 13 to 14, layers 1 and 2 from 14 to 15. Layer 1 is in at 14.5 and
    # computed by 15, layer 2 by 15.5 (in at 15), layers 3 and 4 by 16.5: TTFT 5.5 from
    # 11, where loading then prefilling gives 6 (15 + 2); the first receiver, from the
    # start, 4.5.
    sim = pipelined_chain_run(tmp_path, 11.0)
    assert list(sim.table.ttft_s[1:]) == [4.5, 5.5]
    check_timeline(sim.table.frame(), sim.cluster.log.frame(), sim.config)


def test_the_rule_for_a_load_that_begins_mid_weights():
    # Joined at offset 0.5, the rate changing at 1 and 2 s: the first layer arrives at 1.5
    # (f = 0.5) and the prefill (4 s, 16 layers) runs free from there: 5.5, beyond the last
    # layers' bound, 3 + 4 / 16 + 4 * 0.5 = 5.25.
    progress = [(0.0, 0.0), (1.0, 0.25), (2.0, 0.75), (3.0, 1.0)]
    assert first_token_at(progress, 4.0, 16, offset=0.5) == 5.5
    # Two layers: the second arrives first, the first from 1.5 to 3; then 2 s each: 7.
    assert first_token_at(progress, 4.0, 2, offset=0.5) == 7.0
    # Joined at the last of 4 layers (in by 1), the others arriving by 2, 3 and 4: the
    # third computes from 4, the fourth after it, 5.0; in order, max(4 + 0.5, 0 + 2).
    assert first_token_at([(0.0, 0.0), (4.0, 1.0)], 2.0, 4, offset=0.75) == 5.0
    assert first_token_at([(0.0, 0.0), (4.0, 1.0)], 2.0, 4) == 4.5
    # Joined within the first layer, which is whole only at the end: as without the
    # pipeline, never later.
    assert first_token_at([(0.0, 0.0), (4.0, 1.0)], 2.0, 4, offset=0.125) == 6.0


def test_a_chains_rate_change_paces_the_pipelined_prefill(tmp_path):
    # a and b start on server 0, whose SSD holds both, and stay busy there. b's chain
    # from server 0 streams alone from 13 at 2 GiB/s, a's joins at 14 and the two share
    # server 0's NIC out at 1 GiB/s until b's ends at 16, then a's runs alone again,
    # ending at 17: a's progress is (14, 0), (16, 0.5), (17, 1). Its prefill (3 s, 32
    # layers) is held to the slow half: 16 + 3 * 0.5 = 17.5 beats 17 + 3 / 32 and
    # 14 + 3: TTFT 5.5. b slows down instead, so only its ends count: 16 + 3 / 32, TTFT
    # 5.09375.
    config = pipelining_config(tmp_path, layers=32, count=3, gpus=2, ssd_a="[0]", ssd_b="[0]")
    rows = [
        (0.0, "a", 512, 200),
        (0.0, "b", 512, 200),
        (11.0, "b", 3072, 1),
        (12.0, "a", 3072, 1),
    ]
    sim = simulate(config, rows, check=True)
    assert sim.loads_by_tier["peer"] == 2
    assert list(sim.table.ttft_s[2:]) == [5.09375, 5.5]
    check_timeline(sim.table.frame(), sim.cluster.log.frame(), config)


@pytest.mark.parametrize(("second_at", "startup"), [(14.0, 5.0), (15.5, 4.5)])
def test_startup_aware_prices_a_pipelined_mid_stream_join_exactly(tmp_path, second_at, startup):
    # A chain at 1 GiB/s (the store at 512 MiB/s): the receiver decided at 11 founds it,
    # joins at 13 and holds the checkpoint at 17 (effective startup 2 + max(4 - 1.5, 0)).
    # One decided at 14 joins at 16 at s = 3 GiB (offset 0.75) and ends at 20. Its first
    # token: max(20 + 0.5 + 0.5, 17 + 2) = 21, an effective startup of 5, which the
    # estimate gives from the stream's position and rate at the decision: 2 + max(4 -
    # (2 * 0.75 - 0.5), 4 * 0.25). One decided at 15.5 would join at 17.5, but the stream
    # stops at 17 (s = 4 GiB, the first receiver's end) and waits for it: offset 0, 4.5.
    config = pipelining_config(
        tmp_path, compute_network="1GiB/s", count=3, gpus=1, network="512MiB/s"
    )
    rows = [(0.0, "a", 512, 200), (11.0, "a", 2048, 1), (second_at, "a", 2048, 1)]
    sim = simulate(config, rows, "startup-aware", check=True)
    t = sim.table
    assert sim.loads_by_tier["peer"] == 2
    assert list(t.startup_s[1:]) == list(t.estimate_s[1:]) == [4.5, startup]
