import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.model.fairshare import max_min_rates, proportional_rates


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


def test_proportional_rates_scale_every_cap_by_the_link_s_over_asking():
    # 0.6 + 1.0 + 0.6 = 2.2 cores asked of 1.1: each gets half its cap.
    flows = [(("cores",), 0.6), (("cores",), 1.0), (("cores",), 0.6)]
    assert proportional_rates(flows, {"cores": 1.1}) == pytest.approx([0.3, 0.5, 0.3])
    # Asked less than the link holds: each its cap.
    assert proportional_rates(flows[:2], {"cores": 2.0}) == [0.6, 1.0]


def test_proportional_rates_equal_max_min_where_the_caps_are_equal():
    flows = [(("cores",), 1.0)] * 3
    assert proportional_rates(flows, {"cores": 2.0}) == max_min_rates(flows, {"cores": 2.0})


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
