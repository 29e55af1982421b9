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
from hypothesis import example, given, target
from hypothesis import strategies as st
from timeline import check_timeline

from policies import policy_names
from tests.property.requests import Row, request_lists

rows = request_lists(max_output=600, max_size=30)
placements = st.sampled_from(["[]", "[0]", "[0, 1]", "[1]"])


# Two servers of one GPU; `b` decodes for 75 s on server 0, the only one holding `a`, when
# `a` is asked for: `migration` moves `b` to server 1, `preemption` preempts it. Random
# draws rarely set this up, so it is always tried.
DISPLACING = (
    [(0.0, "b", 100, 600), (10.0, "a", 100, 10)],
    {"count": 2, "gpus": 1, "max_batch": 1, "keep_alive": 8.0, "network": "64MiB/s"}
    | {"ssd_a": "[0]", "ssd_b": "[0]"},
)


@pytest.mark.parametrize("policy", policy_names())
def test_every_request_ends_once_with_all_its_tokens(tmp_path, policy):
    displaced: list[int] = []  # per example, the migrations and preemptions it made

    @example(*DISPLACING)
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
    def conserves(trace: list[Row], cluster: dict) -> None:
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
        displaced.append(first.migrations + first.preemptions)

    conserves()
    if policy in ("migration", "preemption"):  # what this test is for: some were checked
        assert sum(n > 0 for n in displaced) >= 1, displaced
