"""Start-up stages under host contention, and the inference options beside them.

The TINY cluster (conftest): one server, a remote load of 4 GiB over 1 GiB/s takes 4 s
(from SSD, 2 s), a prompt of 512 tokens prefills in 0.5 s. Every expectation below is
computed by hand and exact in binary floating point.
"""

import math

import pytest
from conftest import simulate, tiny_config

from policies.estimator import start_s
from sim.config import read_config
from sim.engine.invariants import InvariantError, check_state
from sim.engine.simulator import Simulation
from sim.model.server import CORES, STARTUP_CPU, rates_in_company
from thaw_kernel.errors import InputError
from thaw_kernel.seeds import rng

ENGINE = 'engine = "e"'


def engine(stages: str) -> str:
    return f"\n[engines.e]\nstages = {stages}\n"


def startups(tmp_path, stages, rows, **kwargs):
    config = tiny_config(tmp_path, model_keys=ENGINE, extra=engine(stages), **kwargs)
    return simulate(config, rows, check=True).table.startup_s


BOTH = [(0.0, "a", 512, 1), (0.0, "b", 512, 1)]
CPU_THEN_LOAD = '[{name = "init", cpu_seconds = 2.0}, {name = "load"}]'


def test_a_cpu_stage_alone_takes_its_cpu_seconds(tmp_path):
    got = startups(tmp_path, CPU_THEN_LOAD, [(0.0, "a", 512, 1)], host_cores=1)
    assert list(got) == [2.0 + 4.0]


def test_two_cpu_start_ups_on_one_core_take_twice_as_long(tmp_path):
    # 2 CPU-seconds each at half a core: both end at 4; then both remote loads share
    # the 1 GiB/s link (8 s): ready at 12.
    assert list(startups(tmp_path, CPU_THEN_LOAD, BOTH, host_cores=1)) == [12.0, 12.0]


def test_two_cpu_start_ups_on_two_cores_do_not_stretch(tmp_path):
    assert list(startups(tmp_path, CPU_THEN_LOAD, BOTH, host_cores=2)) == [10.0, 10.0]


def test_two_cpu_start_ups_on_one_and_a_half_effective_cores_each_take_three_quarters(tmp_path):
    # 2 CPU-seconds each at 0.75 of a core: both end at 8/3; then the shared 8 s load.
    got = startups(tmp_path, CPU_THEN_LOAD, BOTH, host_cores=1.5)
    assert list(got) == pytest.approx([8 / 3 + 8.0, 8 / 3 + 8.0])


def test_start_ups_in_company_slow_before_the_cores_run_out(tmp_path):
    # On 2 cores each start-up has a core, but in company runs at 1/1.25 of it: 2
    # CPU-seconds take 2.5 s; then the shared 8 s load. Alone, no company: 2 s.
    got = startups(tmp_path, CPU_THEN_LOAD, BOTH, host_cores=2, company_slowdown=0.25)
    assert list(got) == pytest.approx([2.5 + 8.0, 2.5 + 8.0])
    alone = [(0.0, "a", 512, 1)]
    assert list(startups(tmp_path, CPU_THEN_LOAD, alone, company_slowdown=0.25)) == [6.0]


def test_a_start_up_in_company_asks_less_and_a_loads_cpu_work_does_not():
    # A start-up's CPU stage beside a load's CPU work of 0.3 cores on 2 cores: nothing
    # saturates; the start-up runs at 1/1.1 of its core, the load at its pace.
    flows = [(STARTUP_CPU, 1.0), (CORES, 0.3)]
    capacity = {"cores": 2.0, STARTUP_CPU[1]: math.inf}
    assert rates_in_company(0.1, flows, capacity) == pytest.approx([1 / 1.1, 0.3])
    assert rates_in_company(0.1, flows[:1], capacity) == [1.0]
    # Over-asked (1/1.1 + 0.3 on 1 core): each its ask times the cores over the asks.
    one = {"cores": 1.0, STARTUP_CPU[1]: math.inf}
    asked = 1 / 1.1 + 0.3
    assert rates_in_company(0.1, flows, one) == pytest.approx([1 / 1.1 / asked, 0.3 / asked])
    # Start-ups alone on over-asked cores: the cores over their number, slowdown or not.
    three = [(STARTUP_CPU, 1.0)] * 3
    assert rates_in_company(0.1, three, {"cores": 2.0, "startup": math.inf}) == pytest.approx(
        [2 / 3] * 3
    )


@pytest.mark.parametrize(("per_host", "ready"), [(1, 2.0 + 4.0), (2, 4.0 + 4.0)])
def test_servers_on_one_host_share_its_cores(tmp_path, per_host, ready):
    # One GPU a server, so a and b start on servers 0 and 1, each loading over its own
    # link (4 s). On a host each, their CPU stages take 2 s; on one host of one core, 4.
    config = tiny_config(
        tmp_path, count=2, gpus=1, host_cores=1, servers_per_host=per_host,
        model_keys=ENGINE, extra=engine(CPU_THEN_LOAD),
    )  # fmt: skip
    sim = simulate(config, BOTH, check=True)
    assert list(sim.table.server) == [0, 1]
    assert list(sim.table.startup_s) == [ready, ready]


def test_an_overlapped_pair_takes_the_longer(tmp_path):
    stages = '[[{name = "c", cpu_seconds = 3.0}, {name = "f", seconds = 1.0}], {name = "load"}]'
    assert list(startups(tmp_path, stages, [(0.0, "a", 512, 1)])) == [3.0 + 4.0]
    stages = '[[{name = "warmup", cpu_seconds = 1.0}, {name = "load"}]]'
    assert list(startups(tmp_path, stages, [(0.0, "a", 512, 1)])) == [4.0]


def test_overlapped_cpu_stages_of_one_instance_share_its_cores(tmp_path):
    # On one core: 0.5 each until the short one ends at 2; the long one's last 2 s at
    # a whole core: 4; then the load.
    stages = '[[{name = "x", cpu_seconds = 1.0}, {name = "y", cpu_seconds = 3.0}], {name = "load"}]'
    assert list(startups(tmp_path, stages, [(0.0, "a", 512, 1)], host_cores=1)) == [8.0]


def test_fixed_stages_after_the_load_count(tmp_path):
    stages = '[{name = "load"}, {name = "graphs", seconds = 0.5}, {name = "w", seconds = 0.25}]'
    assert list(startups(tmp_path, stages, [(0.0, "a", 512, 1)])) == [4.75]


def test_models_without_an_engine_start_as_before(tmp_path):
    config = tiny_config(tmp_path, extra=engine(CPU_THEN_LOAD))
    assert list(simulate(config, [(0.0, "a", 512, 1)]).table.startup_s) == [2.0 + 4.0]


def test_the_estimator_prices_the_cores_other_start_ups_hold(tmp_path):
    # a starts on server 0 at t = 0 (4 CPU-seconds, one core). At t = 1 b's CPU stage
    # there would share the core with a's 3 s left: a ends 6 s on, b's last second takes
    # 1 more, then its load 4 s: 11. On the idle server 1: 4 + 4 = 8.
    stages = '[{name = "init", cpu_seconds = 4.0}, {name = "load"}]'
    config = tiny_config(tmp_path, count=2, host_cores=1, model_keys=ENGINE, extra=engine(stages))
    sim = simulate(config, [(0.0, "a", 512, 1), (1.0, "b", 512, 1)], "startup-aware", check=True)
    assert list(sim.table.server) == [0, 1]
    assert sim.table.estimate_s[1] == sim.table.startup_s[1] == 8.0
    halted = Simulation(config, sim.table.frame().iloc[:0], "startup-aware", rng(0, "policy"))
    halted.cluster.servers[0].cores.start(3.0, ("cores",), 1.0, lambda: None)
    assert start_s(halted.cluster, 0, "b") == 11.0
    assert start_s(halted.cluster, 1, "b") == 8.0


COPY_AFTER = '[[{name = "init", cpu_seconds = 1.0}, {name = "load"}], {name = "copy"}]'


def test_with_a_copy_stage_the_load_reads_into_host_memory_and_the_copy_follows(tmp_path):
    # From SSD: 4 GiB into host memory at 2 GiB/s (the CPU stage beside it shorter), then
    # onto the GPU at 4 GiB/s. The instance log times the load alone.
    config = tiny_config(tmp_path, ssd_a="[0]", model_keys=ENGINE, extra=engine(COPY_AFTER))
    sim = simulate(config, [(0.0, "a", 512, 1)], check=True)
    assert sim.table.startup_s[0] == 2.0 + 1.0
    assert sim.cluster.log.frame().load_s[0] == 2.0


def test_the_instance_log_times_the_runtime_before_and_beside_the_load(tmp_path):
    # Serial on one core: two 2 CPU-second stages at half a core end at 4, then the
    # loads. Beside the load: the CPU stage's 1 s, though the step ends with the load's 2 s;
    # a fixed step folded before, then the later of two stages beside the load (4 s).
    config = tiny_config(tmp_path, host_cores=1, model_keys=ENGINE, extra=engine(CPU_THEN_LOAD))
    assert list(simulate(config, BOTH).cluster.log.frame().runtime_s) == [4.0, 4.0]
    config = tiny_config(tmp_path, ssd_a="[0]", model_keys=ENGINE, extra=engine(COPY_AFTER))
    assert list(simulate(config, [(0.0, "a", 512, 1)]).cluster.log.frame().runtime_s) == [1.0]
    beside = '[{name = "g", seconds = 0.25}, {name = "h", seconds = 0.5}, {name = "load"}]'
    stages = f'[{{name = "f", seconds = 0.5}}, {beside}]'
    config = tiny_config(tmp_path, model_keys=ENGINE, extra=engine(stages))
    assert list(simulate(config, [(0.0, "a", 512, 1)]).cluster.log.frame().runtime_s) == [1.0]


def test_with_a_copy_stage_a_start_from_dram_only_copies(tmp_path):
    # a's first instance loads from SSD into DRAM (3 s) and serves until 3.5 s; the
    # keep-alive of 0 stops it; the second start finds the copy in DRAM: the CPU stage
    # (1 s) beside an empty load, then the copy (1 s).
    config = tiny_config(
        tmp_path, ssd_a="[0]", keep_alive=0.0, model_keys=ENGINE, extra=engine(COPY_AFTER)
    )
    sim = simulate(config, [(0.0, "a", 512, 1), (10.0, "a", 512, 1)], check=True)
    assert list(sim.table.frame()["tier"].astype(str)) == ["ssd", "dram"]
    assert list(sim.table.startup_s) == [3.0, 1.0 + 1.0]
    assert list(sim.cluster.log.frame().load_s) == [2.0, 0.0]


def test_the_estimator_prices_a_copy_stage_exactly(tmp_path):
    config = tiny_config(
        tmp_path, count=2, ssd_a="[0]", model_keys=ENGINE, extra=engine(COPY_AFTER)
    )
    rows = [(0.0, "a", 512, 1), (1.0, "b", 512, 1)]
    sim = simulate(config, rows, "startup-aware", check=True)
    assert list(sim.table.estimate_s) == list(sim.table.startup_s) == [3.0, 4.0 + 1.0]


def test_peer_loading_is_refused_beside_a_copy_stage(tmp_path):
    tiny_config(tmp_path, model_keys=ENGINE, extra=engine(COPY_AFTER))
    path = tmp_path / "tiny.toml"
    path.write_text("peer_loading = true\n" + path.read_text())
    with pytest.raises(InputError, match="peer_loading: not modelled with an engine's copy"):
        read_config(path)


def test_a_fixed_prefill_cost_adds_to_every_prefill(tmp_path):
    config = tiny_config(tmp_path, ssd_a="[0]", model_keys="prefill_fixed_s = 0.25")
    sim = simulate(config, [(0.0, "a", 512, 1)], check=True)
    assert sim.table.ttft_s[0] == 2.0 + 2.0 + 0.5 + 0.25


@pytest.mark.parametrize(("waits", "ttft"), [(False, 0.5), (True, 0.0625 + 0.5)])
def test_a_prefill_waits_for_the_decode_step_in_progress(tmp_path, waits, ttft):
    # The first request is warm at 4 and its prefill (1 s) ends at 5; it decodes at
    # 0.125 s a step. The second arrives at 5.1875, 1.5 steps in: waiting for the step
    # in progress costs 0.0625 s before its 0.5 s prefill.
    keys = f"prefill_waits_for_step = {str(waits).lower()}"
    config = tiny_config(tmp_path, ssd_a="[0]", model_keys=keys)
    sim = simulate(config, [(0.0, "a", 1024, 100), (5.1875, "a", 512, 1)], check=True)
    assert sim.table.ttft_s[0] == 5.0
    assert sim.table.ttft_s[1] == ttft


def test_a_waiting_prefill_lets_the_step_in_progress_finish(tmp_path):
    # The second prompt's prefill runs from the step boundary 5.25 to 5.75; the first
    # request's 99 decode steps of 0.125 s lose exactly those 0.5 s, nothing more.
    config = tiny_config(tmp_path, ssd_a="[0]", model_keys="prefill_waits_for_step = true")
    sim = simulate(config, [(0.0, "a", 1024, 100), (5.1875, "a", 512, 1)], check=True)
    assert sim.table.e2e_s[0] == 5.0 + 99 * 0.125 + 0.5


BAD = [
    ("stages = []", "engines.e.stages: expected a non-empty list"),
    ('stages = [{name = "init", seconds = 1.0}]', 'exactly one {name = "load"}'),
    ('stages = [{name = "load"}, {name = "load"}]', "appears twice"),
    ('stages = [{name = "load", seconds = 1.0}]', "engines.e.stages[0].seconds: the load"),
    ('stages = [{name = "load"}, {name = "x"}]', "engines.e.stages[1]: stage 'x' needs"),
    (
        'stages = [{name = "load"}, {name = "x", seconds = 1, cpu_seconds = 1}]',
        "engines.e.stages[1]: stage 'x' needs",
    ),
    ('stages = [{name = "load"}, [{name = "x", cpu_seconds = 0}]]', "stages[1][0].cpu_seconds"),
    ('stages = [{name = "load"}, []]', "engines.e.stages[1]: an empty list"),
    ('stages = [{name = "load", when = 1}]', "engines.e.stages[0].when: unknown key"),
    ('stages = [{name = "load"}]\nwarm = 1', "engines.e.warm: unknown key"),
    ('stages = [[{name = "load"}, {name = "copy"}]]', "the copy stage must come in a step after"),
    ('stages = [{name = "copy"}, {name = "load"}]', "the copy stage must come in a step after"),
    ('stages = [{name = "load"}, {name = "copy", seconds = 1.0}]', "the copy stage takes no"),
    (
        'stages = [{name = "load"}, [{name = "copy"}, {name = "copy"}]]',
        "engines.e.stages: stage 'copy' appears twice",
    ),
]


@pytest.mark.parametrize(("body", "message"), BAD)
def test_a_bad_engine_is_refused_naming_file_and_key(tmp_path, body, message):
    with pytest.raises(InputError) as caught:
        tiny_config(tmp_path, model_keys=ENGINE, extra=f"\n[engines.e]\n{body}\n")
    assert str(caught.value).startswith(str(tmp_path / "tiny.toml"))
    assert message in str(caught.value)


def test_an_unknown_engine_and_bad_new_keys_are_refused(tmp_path):
    with pytest.raises(InputError, match=r"models.a.engine: unknown engine 'nope'"):
        tiny_config(tmp_path, model_keys='engine = "nope"')
    with pytest.raises(InputError, match=r"servers\[0\].host_cores: expected a positive"):
        tiny_config(tmp_path, host_cores=0)
    with pytest.raises(InputError, match=r"servers\[0\].servers_per_host: expected a positive"):
        tiny_config(tmp_path, servers_per_host=0)
    with pytest.raises(InputError, match=r"models.a.prefill_waits_for_step: expected true"):
        tiny_config(tmp_path, model_keys="prefill_waits_for_step = 1")


def test_the_resolved_config_keeps_the_engines(tmp_path):
    config = tiny_config(tmp_path, model_keys=ENGINE, extra=engine(CPU_THEN_LOAD))
    path = tmp_path / "resolved.toml"
    path.write_text(config.to_toml())
    assert read_config(path).engines == config.engines


def test_the_checker_catches_over_committed_cores_and_lost_cpu_work(tmp_path):
    config = tiny_config(tmp_path, host_cores=1)
    sim = Simulation(config, simulate(config, []).table.frame(), "locality", rng(0, "policy"))
    cores = sim.cluster.servers[0].cores
    first = cores.start(1.0, ("cores",), 1.0, lambda: None)
    cores.start(1.0, ("cores",), 1.0, lambda: None)
    seen: dict[int, dict] = {}
    check_state(sim, 0.0, seen)  # two stages at half a core each: sound
    sim.clock.run(until=1.0)
    first.remaining -= 0.25  # a quarter CPU-second vanishes
    with pytest.raises(InvariantError, match=r"CPU stage of 1\.0 CPU-seconds has"):
        check_state(sim, 0.0, seen)
    first.remaining += 0.25
    first.rate = 1.0
    with pytest.raises(InvariantError, match=r"CPU stages take 1\.5 of 1\.0 cores"):
        check_state(sim, 0.0, seen)
