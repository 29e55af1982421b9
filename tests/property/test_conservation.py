"""Property tests: whatever the policy, migrations and preemptions lose nothing.

Every request ends exactly once, having received exactly its output tokens (the
simulator raises otherwise: `RequestTable.done`), its timeline agrees with its instance's
(`tests/timeline.py`), the cluster's books hold after every event (`sim.engine.invariants`), and
a fixed seed gives identical results.
"""

import numpy as np
import pandas as pd
import pytest
from conftest import simulate, tiny_config
from hypothesis import HealthCheck, given, settings, target
from hypothesis import strategies as st
from timeline import check_timeline

from policies import policy_names

rows = st.lists(
    st.tuples(
        st.floats(0.0, 20.0, allow_nan=False),
        st.sampled_from(["a", "b"]),
        st.integers(1, 2048),
        st.integers(1, 600),
    ),
    min_size=1,
    max_size=30,
)
placements = st.sampled_from(["[]", "[0]", "[0, 1]", "[1]"])


@pytest.mark.parametrize("policy", policy_names())
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    trace=rows,
    cluster=st.fixed_dictionaries(
        {
            "count": st.integers(2, 3),
            "gpus": st.integers(1, 2),
            "max_batch": st.integers(1, 4),
            "keep_alive": st.sampled_from([0.0, 1.0, 8.0, 1000.0]),
            "network": st.sampled_from(["1GiB/s", "64MiB/s"]),  # slow: migration pays
            "ssd_a": placements,
            "ssd_b": placements,
        }
    ),
)
def test_every_request_ends_once_with_all_its_tokens(tmp_path, trace, policy, cluster):
    config = tiny_config(tmp_path, **cluster)
    trace = sorted(trace)
    first = simulate(config, trace, policy, seed=3, check=True)  # audits every event
    t = first.table
    target(float(first.migrations + first.preemptions))  # steer towards contention
    assert (t.status == 1).all()
    np.testing.assert_allclose(t.generated, t.output_tokens, rtol=1e-9)
    check_timeline(t.frame(), first.cluster.log.frame(), config)
    assert (t.ttft_s > 0).all() and (t.e2e_s >= t.ttft_s).all()
    assert (t.migration_pause_s[t.migrations > 0] > 0).all()
    assert first.cluster.gpu_seconds >= 0
    again = simulate(config, trace, policy, seed=3)
    pd.testing.assert_frame_equal(first.table.frame(), again.table.frame())
