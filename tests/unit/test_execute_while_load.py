"""Execute-while-load (`sim.model.overlap`), worked by hand on the tiny cluster: checkpoints of
4 GiB from the remote store at 1 GiB/s (4 s alone), prefills at 1,024 tokens/s, a fixed
2 s `init` stage before the load."""

import pytest

import sim.model.instance
from sim.engine.invariants import InvariantError
from sim.model.overlap import first_token_at
from tests.conftest import simulate, tiny_config
from thaw_kernel.errors import InputError

ENGINE = """
[engines.e]
stages = [{{name = "init", seconds = 2.0}}, {{name = "load"}}]
execute_while_load = {on}
"""


def config(tmp_path, on="true", layers=4):
    keys = f'engine = "e"\nlayers = {layers}'
    return tiny_config(tmp_path, model_keys=keys, extra=ENGINE.format(on=on))


def test_a_solo_load_hides_all_but_the_last_layer_when_it_outlasts_the_prefill(tmp_path):
    # Load 2 -> 6 s; prefill 2 s of 4 layers: first token at max(6 + 0.5, 2 + 2) = 6.5.
    sim = simulate(config(tmp_path), [(0.0, "a", 2048, 1)], check=True)
    assert sim.table.ttft_s[0] == 6.5
    assert sim.table.startup_s[0] == 4.5  # effective: the first token less the prefill
    assert sim.table.prefill_s[0] == 2.0


def test_a_solo_load_shorter_than_the_prefill_costs_only_the_prefill(tmp_path):
    # Prefill 8 s: max(6 + 2, 2 + 8) = 10; loading then prefilling would give 14.
    sim = simulate(config(tmp_path), [(0.0, "a", 8192, 1)], check=True)
    assert sim.table.ttft_s[0] == 10.0


def test_it_is_off_unless_the_engine_switches_it_on(tmp_path):
    sim = simulate(config(tmp_path, on="false"), [(0.0, "a", 2048, 1)], check=True)
    assert sim.table.ttft_s[0] == 8.0  # load ends at 6, then the whole 2 s prefill


def test_a_request_joining_during_the_load_waits_for_it(tmp_path):
    # The second request did not start the instance: its prefill follows the first's.
    sim = simulate(config(tmp_path), [(0.0, "a", 2048, 1), (1.0, "a", 1024, 1)], check=True)
    assert list(sim.table.ttft_s) == [6.5, 6.5]  # 7.5 - 1.0: prefilled 6.5 -> 7.5


def test_a_load_whose_rate_halves_midway(tmp_path):
    # a loads alone at 1 GiB/s from 2 s; b's load joins at 4 s (f_a = 0.5) and the two
    # share the link at 0.5 GiB/s: a ends at 8 s, then b alone at 1 GiB/s ends at 10 s.
    # a (prefill 4 s, 32 layers): its compute is held to the load's progress, so the
    # first token is the last layer after the load: 8 + 4 / 32 = 8.125 (12 without).
    # b (prefill 6 s): held to its load until 8 s (half done), then faster than its
    # compute, which runs free: 8 + 6 * (1 - 0.5) = 11 > 10 + 6 / 32, so its TTFT is 9.
    rows = [(0.0, "a", 4096, 1), (2.0, "b", 6144, 1)]
    sim = simulate(config(tmp_path, layers=32), rows, check=True)
    assert list(sim.table.ttft_s) == [8.125, 9.0]


def test_the_rule_at_each_change_of_the_loads_rate():
    progress = [(4.0, 0.0), (8.0, 0.5), (10.0, 1.0)]  # b's load above
    assert first_token_at(progress, 6.0, 32) == 11.0
    assert first_token_at(progress, 6.0, 1) == 16.0  # one layer: load, then prefill
    assert first_token_at([(2.0, 0.0), (6.0, 1.0)], 2.0, 4) == 6.5


def test_startup_aware_prices_the_effective_startup_exactly(tmp_path):
    sim = simulate(config(tmp_path), [(0.0, "a", 2048, 1)], policy="startup-aware")
    assert sim.table.estimate_s[0] == sim.table.startup_s[0] == 4.5


@pytest.mark.parametrize(
    ("engine", "message"),
    [
        (
            'stages = [{name = "load"}]\nexecute_while_load = 1',
            "engines.e.execute_while_load: expected true or false",
        ),
        (
            'stages = [{name = "load"}, {name = "init", seconds = 1.0}]\nexecute_while_load = true',
            "engines.e.execute_while_load: needs the load alone as the last step",
        ),
    ],
)
def test_bad_switches_are_refused_naming_the_key(tmp_path, engine, message):
    with pytest.raises(InputError, match=message):
        tiny_config(tmp_path, model_keys='engine = "e"', extra=f"[engines.e]\n{engine}\n")


def test_layers_must_be_a_positive_integer(tmp_path):
    with pytest.raises(InputError, match=r"models\.a\.layers"):
        tiny_config(tmp_path, model_keys="layers = 0")


def test_the_audit_catches_a_rule_that_delays_the_first_token(tmp_path, monkeypatch):
    # A broken rule: the first token a second after loading then prefilling.
    late = lambda progress, prefill_s, layers, offset: progress[-1][0] + prefill_s + 1.0  # noqa: E731
    monkeypatch.setattr(sim.model.instance, "first_token_at", late)
    with pytest.raises(InvariantError, match="effective ready"):
        simulate(config(tmp_path), [(0.0, "a", 2048, 1)], check=True)
