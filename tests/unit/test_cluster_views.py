"""Every class a policy reads the cluster through answers all of `ClusterView`, with the
protocol's parameters: a policy written against the protocol runs on each of them."""

import inspect

import pytest

from calibration.validate.view import Books
from policies.base import ClusterView
from sim.model.cluster import Cluster
from sim.queues.reserved_view import ReservedView

MEMBERS = sorted(name for name in vars(ClusterView) if not name.startswith("_"))


@pytest.mark.parametrize("view", [Cluster, ReservedView, Books])
@pytest.mark.parametrize("name", MEMBERS)
def test_each_view_answers_the_protocol(view, name):
    assert hasattr(view, name), f"{view.__name__} lacks {name}"
    wanted = getattr(ClusterView, name)
    if callable(wanted):
        params = list(inspect.signature(wanted).parameters)
        assert list(inspect.signature(getattr(view, name)).parameters) == params
