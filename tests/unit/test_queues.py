"""Queue disciplines checked by hand on one server: who gets the GPUs, and when.

Sizes and bandwidths are exact in binary floating point, so times compare with ==. Every
checkpoint starts on the server's SSD (2 GiB/s) and is installed in its DRAM (64 GiB,
room for all) by its first load; instances start up in 2 s.
"""

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from policies import get_policy, policy_names
from policies.base import Needs, Request, Start
from sim.config import read_config
from sim.engine.simulator import Simulation
from sim.model.clock import Clock
from sim.model.cluster import Cluster
from sim.queues.fifo import Fifo
from sim.queues.reserved_view import ReservedView
from sim.results.summary import summarize
from thaw_kernel import seeds

SERVER = """
keep_alive_s = 8.0
instance_startup_s = 2.0
queue = "{queue}"

[[servers]]
name = "one"
count = {count}
gpus = {gpus}
gpu_memory = "16GiB"
dram = "64GiB"
ssd = "64GiB"
ssd_read = "2GiB/s"
network = "1GiB/s"
pcie = "4GiB/s"
"""

MODEL = """
[models.{name}]
weights = "{gib}GiB"
gpus = {gpus}
prefill_tokens_per_s = 1024.0
decode_step_s = 0.125
max_batch = 4
ssd_servers = [0]
ttft_slo_s = {slo}
"""


def config(tmp_path, queue, models, *, count=1, gpus=2):
    """`models`: (name, GiB, GPUs, TTFT SLO) per catalog entry."""
    text = SERVER.format(queue=queue, count=count, gpus=gpus)
    for name, gib, need, slo in models:
        text += MODEL.format(name=name, gib=gib, gpus=need, slo=slo)
    path = tmp_path / "cluster.toml"
    path.write_text(text)
    return read_config(path)


def run(cfg, rows, policy="locality"):
    trace = pd.DataFrame(rows, columns=["arrival_s", "model", "input_tokens", "output_tokens"])
    sim = Simulation(cfg, trace, policy, seeds.rng(0, "policy"), check=True)
    sim.run()
    return sim


# a and b take one GPU each; big takes both. b's request decodes until t = 10: its
# instance starts at 0 and loads alongside a's (4 GiB each sharing the SSD's 2 GiB/s: both
# ready at 2 + 4 = 6), prefills 512 tokens in 0.5 s, then 28 tokens at 0.125 s.
STARVING = [
    (0.0, "a", 512, 1),  # a idle from 6.5
    (0.0, "b", 512, 29),  # b idle from 10
    (1.0, "big", 512, 1),
    (8.0, "a", 512, 1),
    (9.75, "a", 512, 13),  # keeps a busy from 9.75 to 11.75
]
CATALOG = [("a", 4, 1, 10.0), ("b", 4, 1, 10.0), ("big", 8, 2, 10.0)]


def test_fifo_lets_a_small_model_take_back_the_gpus_a_big_one_waits_for(tmp_path):
    sim = run(config(tmp_path, "fifo", CATALOG), STARVING)
    t = sim.table
    # a's requests rejoin its idle instance (8.0-8.5, 9.75-11.75): big must wait until a
    # and b are idle at once, at 11.75; then 2 s start-up, 8 GiB at 2 GiB/s, 0.5 s prefill.
    assert t.placed_at[2] == 11.75
    assert t.ttft_s[2] == 11.75 + 2.0 + 4.0 + 0.5 - 1.0
    assert list(t.ttft_s[3:]) == [0.5, 0.5]  # joined the warm instance


def test_backfill_fences_what_the_head_waits_for(tmp_path):
    sim = run(config(tmp_path, "backfill", CATALOG), STARVING)
    t = sim.table
    # big reserves the server at 1: a and b take no new request. b drains at 10; big
    # starts then, reclaiming both (2 s, 8 GiB from SSD at 2 GiB/s, 0.5 s prefill).
    assert t.placed_at[2] == 10.0
    assert t.ttft_s[2] == 10.0 + 2.0 + 4.0 + 0.5 - 1.0
    # a's requests wait behind it; when big idles at 16.5, a starts again (4 GiB from
    # DRAM over one GPU's 4 GiB/s PCIe: 1 s) and both join it, prefilled in turn.
    assert list(t.placed_at[3:]) == [16.5, 16.5]
    assert t.ttft_s[3] == 16.5 + 2.0 + 1.0 + 0.5 - 8.0
    assert t.ttft_s[4] == 16.5 + 2.0 + 1.0 + 0.5 + 0.5 - 9.75
    assert sim.queue.reservations == 1
    assert sim.queue.holder is None and sim.queue.reserved is None


# One GPU. a serves until 5.5 (ready at 2 + 2 = 4, prefill 0.5, 8 tokens at 0.125 s);
# meanwhile b (lenient SLO) and then c (tight SLO) wait for the GPU.
DEADLINES = [(0.0, "a", 512, 9), (1.0, "b", 512, 1), (2.0, "c", 512, 1)]
SLOS = [("a", 4, 1, 100.0), ("b", 4, 1, 100.0), ("c", 4, 1, 5.0)]


@pytest.mark.parametrize(
    ("queue", "first", "second"),
    [("fifo", "b", "c"), ("edf", "c", "b")],
)
def test_edf_serves_the_earliest_deadline_first(tmp_path, queue, first, second):
    sim = run(config(tmp_path, queue, SLOS, gpus=1), DEADLINES)
    ttft = dict(zip(["a", "b", "c"], sim.table.ttft_s, strict=True))
    arrival = {"b": 1.0, "c": 2.0}
    # Each starts when the GPU frees: 2 s start-up, 4 GiB from SSD in 2 s, 0.5 s prefill.
    assert ttft[first] == 5.5 + 4.5 - arrival[first]
    assert ttft[second] == 10.0 + 4.5 - arrival[second]


def test_drop_turns_away_what_cannot_start_and_serves_what_can(tmp_path):
    # One GPU: a holds it until 6 (two prefills, then 8 tokens). b and c arrive meanwhile
    # and are turned away at once; a second a (at 3) joins a's instance; d, once a is
    # idle, reclaims the GPU.
    rows = [*DEADLINES, (3.0, "a", 512, 1), (7.0, "d", 512, 1)]
    catalog = [*SLOS, ("d", 4, 1, 100.0)]
    sim = run(config(tmp_path, "drop", catalog, gpus=1), rows)
    t = sim.table.frame()
    assert list(t["status"]) == ["done", "dropped", "dropped", "done", "done"]
    assert t["ttft_s"][1:3].isna().all() and list(t["server"][1:3]) == [-1, -1]
    assert t["ttft_s"][0] == 2.0 + 2.0 + 0.5  # start-up, 4 GiB from SSD, prefill
    assert t["queue_s"][4] == 0.0  # a's idle instance gave up the GPU at once
    (tmp_path / "trace.csv").write_text("")
    assert summarize(sim, "locality", 0, tmp_path / "trace.csv")["dropped"] == 2


def test_a_reservation_hides_its_gpus_from_every_other_decision(tmp_path):
    cfg = config(tmp_path, "backfill", CATALOG, count=2)
    cluster = Cluster(cfg, Clock())
    view = ReservedView(cluster, 0, 2)
    assert view.available_gpus(0) == 0 and view.gpus_in_use(0) == 2
    assert view.total_available_gpus() == 2
    assert not view.can_start(0, "a") and view.can_start(1, "a")
    assert list(view.candidates("a")) == [1] and view.candidate_count("a") == 1
    assert view.candidate("a", 0) == 1 and view.least_occupied_candidate("a") == 1
    assert list(view.by_occupancy("a")) == [1]
    assert view.running(0) == []
    request = Request(0, "a", 0.0, 512, 1)
    for policy in ("random", "locality", "migration", "startup-aware", "preemption"):
        decision = get_policy(policy)(np.random.default_rng(0)).place(request, view)
        assert isinstance(decision, Start) and decision.server == 1, policy


def test_a_reservation_moves_its_server_back_in_the_order_of_occupancy(tmp_path):
    cluster = Cluster(config(tmp_path, "backfill", CATALOG, count=2, gpus=4), Clock())
    view = ReservedView(cluster, 0, 2)
    assert list(cluster.by_occupancy("a")) == [0, 1]  # both idle: by id
    assert list(view.by_occupancy("a")) == [1, 0]  # 0 looks 2 GPUs busier
    assert list(ReservedView(cluster, 0, 4).by_occupancy("a")) == [1]  # 0 holds none


def test_a_reservation_leaves_the_gpus_beyond_it(tmp_path):
    cluster = Cluster(config(tmp_path, "backfill", CATALOG, gpus=4), Clock())
    view = ReservedView(cluster, 0, 2)
    assert view.available_gpus(0) == 2 and view.can_start(0, "big")
    assert view.candidate_count("big") == 1 and view.least_occupied_candidate("big") == 0


def test_the_queue_chosen_is_recorded_where_the_run_can_be_reproduced():
    from sim.api import run as simulate

    result = simulate("locality", max_requests=50, queue="backfill")
    assert result.summary["queue"] == "backfill"
    assert 'queue = "backfill"' in result.config.to_toml()


def test_a_preempted_request_older_than_the_head_takes_the_reservation_over(tmp_path):
    # One GPU, one request an instance, nothing kept warm: `preemption` stops a's instance
    # for b's head, and a's request goes back ahead of a's request that holds the
    # reservation, which must then pass to the older one (audited after every event).
    cfg = config(tmp_path, "backfill", [(m, 1, 1, 1.0) for m in "abcd"], gpus=1)
    models = {name: replace(spec, max_batch=1) for name, spec in cfg.models.items()}
    cfg = replace(cfg, keep_alive_s=0.0, models=models)
    rows = [(0.0, "a", 1, 1), (0.0, "a", 1, 1), (0.0, "a", 1, 1), (0.0, "b", 1, 1)]
    sim = run(cfg, rows, policy="preemption")
    assert sim.preemptions > 0 and (sim.table.status == 1).all()


# Thirty models on two servers of two GPUs: most of them wait at any moment.
MANY = [(f"s{k}", 1, 1, 10.0 + k) for k in range(24)] + [(f"b{k}", 2, 2, 5.0 + k) for k in range(6)]


def many_waiting(count: int = 90) -> list[tuple[float, str, int, int]]:
    rng = np.random.default_rng(1)
    names = [name for name, *_ in MANY]
    return [
        (float(t), names[rng.integers(len(names))], int(rng.integers(1, 1024)), 40)
        for t in np.sort(rng.uniform(0.0, 20.0, count))
    ]


def counted(cfg, rows, policy, gated):
    """A checked run, the queue skipping the retries that surely wait or not: the
    simulation, the routes it tried, and the most models that waited at once."""
    trace = pd.DataFrame(rows, columns=["arrival_s", "model", "input_tokens", "output_tokens"])
    sim = Simulation(cfg, trace, policy, seeds.rng(0, "policy"), check=True)
    if not gated:
        sim.queue.needs = Needs.NOTHING  # no promise: every waiting model is visited
    route, tried, peak = sim.queue.route, [0], [0]

    def counting(i: int, model: str) -> bool:
        tried[0] += 1
        peak[0] = max(peak[0], len(sim.queue.waiting))
        return route(i, model)

    sim.queue.route = counting
    sim.run()
    return sim, tried[0], peak[0]


def uncached(cfg):
    """Half the models on no SSD, and DRAM for two checkpoints: models become cached and
    uncached as they load and are evicted (`Needs.GPUS` reads that)."""
    models = {
        name: replace(spec, ssd_servers=()) if k % 2 else spec
        for k, (name, spec) in enumerate(cfg.models.items())
    }
    servers = tuple(replace(group, dram=4 * 2**30) for group in cfg.servers)
    return replace(cfg, models=models, servers=servers)


@pytest.mark.parametrize("cached", ["all", "some"])
@pytest.mark.parametrize("queue", ["fifo", "edf", "backfill"])
@pytest.mark.parametrize("policy", policy_names())
def test_a_retry_skips_only_the_models_that_would_surely_wait(tmp_path, queue, policy, cached):
    cfg = config(tmp_path, queue, MANY, count=2, gpus=2)
    if cached == "some":
        cfg = uncached(cfg)
    rows = many_waiting()
    gated, tried, peak = counted(cfg, rows, policy, gated=True)
    full, tried_all, _ = counted(cfg, rows, policy, gated=False)
    assert peak >= 15
    pd.testing.assert_frame_equal(gated.table.frame(), full.table.frame(), check_exact=True)
    pd.testing.assert_frame_equal(
        gated.cluster.log.frame(), full.cluster.log.frame(), check_exact=True
    )
    if gated.policy.needs is Needs.NOTHING:
        assert tried == tried_all
    else:
        assert tried * 3 < tried_all, (tried, tried_all)


class Uncaching:
    """A cluster where nothing can start, two GPUs are available (for a migration), and
    the first model's visit evicts the second's checkpoint."""

    def __init__(self) -> None:
        self.cached_models = {"a", "b", "c"}

    def host_groups(self, model: str) -> tuple[int, ...]:
        return (0,)

    def cached(self, model: str) -> bool:
        return model in self.cached_models

    def holders(self, model: str, tier: str) -> list[int]:
        return [0] if model in self.cached_models else []

    def total_available_gpus(self) -> int:
        return 2

    def gpus_needed(self, model: str) -> int:
        return 1

    def least_occupied_candidate(self, model: str) -> None:
        return None


def test_a_model_uncached_during_a_retry_is_judged_by_its_new_class():
    # a, b and c wait in the line of cached one-GPU models. Visiting a evicts b, whose
    # need is then unmet; c's is still met (a migration could make room): a retry that
    # judged the line by b would pass c by.
    cluster, visits, arriving = Uncaching(), [], [True]
    models = {name: SimpleNamespace(gpus=1) for name in "abc"}

    def route(i: int, model: str) -> bool:
        if arriving[0]:  # each waits
            return False
        visits.append(model)
        if model == "a":
            cluster.cached_models.discard("b")
            queue.cached_changed("b")
        return model == "c"

    queue = Fifo(route, cluster, models, np.zeros(3), Needs.GPUS)
    for i, model in enumerate("abc"):
        queue.arrive(i, model)
    arriving[0] = False
    queue.drain()
    assert visits == ["a", "c"] and list(queue.waiting) == ["a", "b"]
    assert queue.audit() is None
