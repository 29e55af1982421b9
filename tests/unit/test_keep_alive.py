"""Keep-alive policies checked by hand on one server: which requests find a warm instance,
which instance gives up its GPU, and what pre-warming starts.

Sizes and bandwidths are exact in binary floating point, so times compare with ==. Every
checkpoint (4 GiB, one GPU) starts on the server's SSD: a first start takes 2 s of
start-up and 2 s of load (2 GiB/s); a start once it is in DRAM loads over one GPU's PCIe
(4 GiB/s) in 1 s. A 512-token prompt prefills in 0.5 s, and each further token takes
0.125 s.
"""

from types import SimpleNamespace

import pandas as pd
import pytest
from timeline import check_timeline

from sim.config import read_config
from sim.engine.simulator import Simulation
from sim.keep_alive import make_keep_alive, parse_keep_alive
from thaw_kernel import seeds

CLUSTER = """
keep_alive_s = 60.0
instance_startup_s = 2.0
keep_alive = "{keep_alive}"

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
"""

MODEL = """
[models.{name}]
weights = "4GiB"
gpus = 1
prefill_tokens_per_s = 1024.0
decode_step_s = 0.125
max_batch = 4
ssd_servers = [0]
"""


def run(tmp_path, keep_alive, rows, models=("a",)):
    path = tmp_path / "cluster.toml"
    path.write_text(CLUSTER.format(keep_alive=keep_alive) + "".join(
        MODEL.format(name=m) for m in models))  # fmt: skip
    config = read_config(path)
    trace = pd.DataFrame(rows, columns=["arrival_s", "model", "input_tokens", "output_tokens"])
    sim = Simulation(config, trace, "locality", seeds.rng(0, "policy"), check=True)
    sim.run()
    return sim


def tiers(sim):
    return [["warm", "dram", "ssd", "remote"][t] for t in sim.table.tier]


def test_fixed_keeps_an_idle_instance_for_its_seconds_only(tmp_path):
    rows = [(0.0, "a", 512, 1), (15.0, "a", 512, 1)]
    short = run(tmp_path, "fixed:10", rows)
    # Idle at 4.5 (2 s start-up, 2 s from SSD, 0.5 s prefill), stopped at 14.5: the
    # request at 15 starts again, from DRAM (2 s + 1 s).
    assert tiers(short) == ["ssd", "dram"]
    assert list(short.table.ttft_s) == [4.5, 3.5]
    assert short.cluster.gpu_seconds == 14.5 + 3.5 + 10.0
    long = run(tmp_path, "fixed:20", rows)
    assert tiers(long) == ["ssd", "warm"] and long.table.ttft_s[1] == 0.5
    assert long.cluster.gpu_seconds == 15.5 + 20.0


def test_fixed_alone_takes_the_clusters_keep_alive_s(tmp_path):
    rows = [(0.0, "a", 512, 1), (64.0, "a", 512, 1), (130.0, "a", 512, 1)]
    sim = run(tmp_path, "fixed", rows)
    # keep_alive_s = 60: idle at 4.5, warm at 64 (idle again at 64.5), cold at 130.
    assert tiers(sim) == ["ssd", "warm", "dram"]


# Every 600 s, one request; the idle times are 595.5 and then 599.5 s: all in the
# 1-minute bin [540, 600).
PERIODIC = [(600.0 * k, "a", 512, 1) for k in range(8)]


def test_histogram_learns_a_period_and_prewarms_before_each_request(tmp_path):
    sim = run(tmp_path, "histogram:min_samples=3", PERIODIC)
    # Three idle times (to the requests at 600, 1200, 1800) fall back to the 4-hour
    # keep-alive: those requests find the first instance warm. From the third on, the
    # head and the tail are the bin [540, 600): after each request the instance stops,
    # and 540 x 0.9 = 486 s later a fresh one starts (from DRAM: ready 3 s later), warm
    # until 600 x 1.1 = 660 s after the idle moment, i.e. 174 s.
    assert tiers(sim) == ["ssd"] + ["warm"] * 7
    assert list(sim.table.ttft_s) == [4.5] + [0.5] * 7
    assert sim.prewarms == 5 and sim.prewarm_hits == 4  # the last one waits in vain
    assert sim.loads_by_tier == {"dram": 5, "ssd": 1, "remote": 0}
    # GPU time: the first instance to 1800.5; four pre-warms from 486 s after an idle
    # moment to the request's end 114 s later; the last from 4686.5 to 4689.5 + 174.
    assert sim.cluster.gpu_seconds == pytest.approx(1800.5 + 4 * 114.0 + 177.0, abs=1e-9)
    log = sim.cluster.log.frame()
    assert list(log["end"]) == ["expired"] * 6
    assert list(log["prewarm"]) == [False] + [True] * 5


def test_fixed_keep_alive_shorter_than_the_period_misses_every_time(tmp_path):
    sim = run(tmp_path, "fixed:60", PERIODIC)
    assert tiers(sim) == ["ssd"] + ["dram"] * 7 and sim.prewarms == 0


def test_histogram_without_enough_samples_keeps_the_fallback_window(tmp_path):
    sim = run(tmp_path, "histogram:fallback_s=100", [(0.0, "a", 512, 1), (150.0, "a", 512, 1)])
    assert tiers(sim) == ["ssd", "dram"] and sim.prewarms == 0
    assert sim.cluster.gpu_seconds == 104.5 + 3.5 + 100.0


# a is asked three times at 0 and idles at 7.5 (both instances ready at 2 + 4 = 6, the two
# loads sharing the SSD; three prefills); b once, idling at 11.5 after 41 tokens. Then c
# needs a GPU at 12, and a comes back at 13.
EVICTION = [
    (0.0, "a", 512, 1),
    (0.0, "a", 512, 1),
    (0.0, "a", 512, 1),
    (0.0, "b", 512, 41),
    (12.0, "c", 512, 1),
    (13.0, "a", 512, 1),
]


def test_greedy_dual_evicts_the_idle_instance_of_lowest_priority(tmp_path):
    sim = run(tmp_path, "greedy-dual", EVICTION, models=("a", "b", "c"))
    # Priorities (clock 0 + the hits of the model's instances x 6 s cold start / 1 GPU):
    # a 18, b 6: c takes b's GPU, and a's request at 13 finds a warm.
    assert tiers(sim)[4:] == ["ssd", "warm"]
    log = sim.cluster.log.frame().set_index("model")
    assert log.loc["b", "end"] == "reclaimed" and log.loc["b", "ended_s"] == 12.0
    # Nothing ever expires: a and c stop when the run has nothing left, at 13.5 and 16.5.
    assert log.loc["a", "end"] == "expired" and log.loc["a", "ended_s"] == 16.5
    assert sim.keep_alive._clock == {0: 6.0}  # the server's clock: b's priority


def test_a_long_fixed_keep_alive_evicts_the_longest_idle_instead(tmp_path):
    sim = run(tmp_path, "fixed:100", EVICTION, models=("a", "b", "c"))
    # a, idle since 7.5, goes first; at 13 a reclaims b and starts again from DRAM.
    assert tiers(sim)[4:] == ["ssd", "dram"]
    assert sim.table.ttft_s[5] == 2.0 + 1.0 + 0.5


class Stand:
    """Stands for an idle instance: the policy only keys its priorities on it."""


def test_greedy_dual_names_its_victims_in_order_beforehand():
    # A wake prices its swap with `reclaim_order` before `victim` picks them one by one.
    policy = make_keep_alive(parse_keep_alive("greedy-dual"), 60.0)
    x, y, z = Stand(), Stand(), Stand()
    server = SimpleNamespace(id=0, idle={x: 1.0, y: 2.0, z: 3.0})
    policy.priority.update({x: 5.0, y: 2.0, z: 5.0})
    order = list(policy.reclaim_order(server))
    assert order == [y, x, z]  # the lowest priority first, the longest idle of equals
    victims = []
    while server.idle:
        victims.append(policy.victim(server))
        del server.idle[victims[-1]]
    assert victims == order


def test_greedy_dual_counts_the_hits_of_the_instances_still_in_the_pool():
    # FaasCache's frequency: the hits of the model's live instances on that server. Each
    # cold start took 4 s (the priority's cost), one GPU (its size); the clock is 0.
    policy = make_keep_alive(parse_keep_alive("greedy-dual"), 60.0)
    model = SimpleNamespace(name="a", gpus=1)

    def instance(hits: int, server: int = 0) -> Stand:
        one = Stand()  # the policy holds instances weakly: a plain object, as an Instance is
        one.__dict__.update(server=server, model=model, admitted=hits, state="warm")
        one.__dict__.update(allocated_at=0.0, ready_at=4.0)
        return one

    x, y = instance(3), instance(2)
    policy.idle(x, 10.0)
    assert policy.priority[x] == 3 * 4.0  # only x is known to the pool yet
    policy.idle(y, 11.0)
    assert policy.priority[y] == (3 + 2) * 4.0
    x.state = "stopped"  # evicted: its hits go with it
    y.admitted = 3
    policy.idle(y, 20.0)
    assert policy.priority[y] == 3 * 4.0
    other = instance(1, server=1)
    policy.idle(other, 21.0)
    assert policy.priority[other] == 1 * 4.0  # another server's pool


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("fixed:-1", "fixed: expected a number from 0"),
        ("fixed:1:2", "fixed: expected a number"),
        ("histogram:bin_s=0", "bin_s: expected a number from 0.001"),
        ("histogram:min_samples=2.5", "min_samples: expected an integer"),
        ("histogram:range_s=1e9,bin_s=1", "at most 1000000 bins"),
        ("histogram:margin=0.1,", "expected key=value, got ''"),
        ("Fixed", "unknown keep-alive policy 'Fixed'"),
    ],
)
def test_bad_specs_say_what_is_wrong(spec, message):
    with pytest.raises(ValueError, match=message):
        parse_keep_alive(spec)


# One 5-GiB model on an engine that prefills behind its load (20 s at 256 MiB/s), and a
# histogram that pre-warms one at 22.90 s, loading when the request of 23 s joins it.
PIPELINED = """
keep_alive_s = 0.0
keep_alive = "histogram:bin_s=1,min_samples=1,cv_min=0"

[[servers]]
name = "one"
count = 2
gpus = 1
gpu_memory = "8GiB"
dram = "4GiB"
ssd = "256GiB"
ssd_read = "256MiB/s"
network = "256MiB/s"
pcie = "256MiB/s"

[models.m0]
weights = "5GiB"
gpus = 1
prefill_tokens_per_s = 512.0
decode_step_s = 0.02
max_batch = 1
ssd_servers = []
layers = 4
engine = "streamed"

[engines.streamed]
stages = [{name = "load"}]
execute_while_load = true
"""


def test_a_request_joining_a_loading_prewarm_waits_for_it(tmp_path):
    """Only the request that starts an instance prefills behind its load: one that joins
    a loading pre-warm waits for it to be ready, and the log says which instances were
    pre-warms."""
    path = tmp_path / "cluster.toml"
    path.write_text(PIPELINED)
    config = read_config(path)
    rows = [(0.0, "m0", 1, 1), (22.0, "m0", 1, 1), (23.0, "m0", 1, 1)]
    trace = pd.DataFrame(rows, columns=["arrival_s", "model", "input_tokens", "output_tokens"])
    sim = Simulation(config, trace, "migration", seeds.rng(5, "policy"), check=True)
    sim.run()
    log = sim.cluster.log.frame()
    joined = log[log["instance"] == sim.table.instance[2]].iloc[0]
    assert joined["prewarm"] and joined["allocated_s"] < 23.0 < joined["ready_s"]
    prefill = 1 / 512
    assert sim.table.ttft_s[2] == pytest.approx(joined["ready_s"] - 23.0 + prefill, abs=1e-12)
    check_timeline(sim.table.frame(), log, config)
