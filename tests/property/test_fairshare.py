import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.model.fairshare import first_then_rest, max_min_rates


def test_a_single_flow_runs_at_its_bottleneck():
    assert max_min_rates([(("ssd",), 10.0)], {"ssd": 4.0}) == [4.0]
    assert max_min_rates([(("ssd",), 3.0)], {"ssd": 4.0}) == [3.0]
    assert max_min_rates([((), 3.0)], {}) == [3.0]


def test_two_flows_on_one_link_get_half_each():
    assert max_min_rates([(("ssd",), 10.0), (("ssd",), 10.0)], {"ssd": 4.0}) == [2.0, 2.0]


def test_a_capped_flow_leaves_the_rest_to_the_other():
    rates = max_min_rates([(("ssd",), 1.0), (("ssd",), 10.0)], {"ssd": 4.0})
    assert rates == [1.0, 3.0]


def test_flows_on_different_links_do_not_interact():
    flows = [(("ssd",), 10.0), (("network",), 10.0), (("network",), 10.0)]
    assert max_min_rates(flows, {"ssd": 4.0, "network": 1.0}) == [4.0, 0.5, 0.5]


def test_the_first_turn_is_served_before_the_rest():
    flows = [(("cores", "loads"), 0.6), (("cores",), 1.0), (("cores", "loads"), 0.6)]
    capacity = {"cores": 1.5, "loads": math.inf}
    assert first_then_rest(flows, capacity, "loads") == pytest.approx([0.6, 0.3, 0.6])


def test_the_rest_get_nothing_of_a_link_the_first_turn_filled_but_for_rounding():
    """Three loads' CPU of 1/3 core each fill one core, less 5.6e-17 in floating point:
    a start-up's stage beside them waits rather than crawl at that rate."""
    flows = [(("cores", "loads"), 0.54)] * 3 + [(("cores",), 1.0)]
    rates = first_then_rest(flows, {"cores": 1.0, "loads": math.inf}, "loads")
    assert rates == [1 / 3, 1 / 3, 1 / 3, 0.0]


links = st.sampled_from(["ssd", "network"])
flow = st.tuples(st.lists(links, max_size=2, unique=True).map(tuple), st.floats(0.1, 100))


@settings(max_examples=200, deadline=None)
@given(
    flows=st.lists(flow, min_size=1, max_size=8),
    ssd=st.floats(0.1, 100),
    network=st.floats(0.1, 100),
)
def test_rates_are_feasible_and_max_min_fair(flows, ssd, network):
    capacity = {"ssd": ssd, "network": network}
    rates = max_min_rates(flows, capacity)
    for link, cap in capacity.items():
        used = sum(r for (path, _), r in zip(flows, rates, strict=True) if link in path)
        assert used <= cap * (1 + 1e-9)
    # Max-min optimality: every flow is at its cap, or crosses a saturated link on which
    # no other flow gets more than it does.
    for (path, cap), rate in zip(flows, rates, strict=True):
        assert rate <= cap * (1 + 1e-9)
        if math.isclose(rate, cap, rel_tol=1e-9):
            continue
        bottlenecked = False
        for link in path:
            users = [r for (p, _), r in zip(flows, rates, strict=True) if link in p]
            saturated = math.isclose(sum(users), capacity[link], rel_tol=1e-9)
            if saturated and max(users) <= rate * (1 + 1e-9):
                bottlenecked = True
        assert bottlenecked
