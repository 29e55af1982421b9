"""Property tests of peer loading: bursts of starts on small clusters with peer loading
on form multicast chains (receivers joining at any point of the stream, members pinned,
idle sources woken), and whatever the draw the books hold after every event (`--check`),
every request ends with all its tokens, the timeline agrees with the instance log, and a
fixed seed gives identical results. Steered towards long chains."""

import numpy as np
import pandas as pd
import pytest
from conftest import TINY, simulate
from hypothesis import HealthCheck, given, settings, target
from hypothesis import strategies as st
from timeline import check_timeline

from policies import policy_names
from sim.config import read_config

LINKS = ["1GiB/s", "2GiB/s", "4GiB/s", "8GiB/s"]

rows = st.lists(
    st.tuples(
        st.floats(0.0, 20.0, allow_nan=False),
        st.sampled_from(["a", "b"]),
        st.integers(1, 2048),
        st.integers(1, 200),
    ),
    min_size=1,
    max_size=40,
)


@pytest.mark.parametrize("policy", policy_names())
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    trace=rows,
    count=st.integers(1, 4),
    gpus=st.integers(1, 4),
    max_batch=st.integers(1, 2),
    keep_alive=st.sampled_from([0.0, 0.5, 8.0]),
    gpu_link=st.sampled_from(LINKS),
    compute_network=st.sampled_from(LINKS),
    ssd=st.sampled_from(["[]", "[0]"]),
)
def test_chains_keep_the_books(
    tmp_path, policy, trace, count, gpus, max_batch, keep_alive, gpu_link, compute_network, ssd
):
    text = TINY.format(
        count=count,
        gpus=gpus,
        max_batch=max_batch,
        ssd_a=ssd,
        ssd_b="[]",
        keep_alive=keep_alive,
        network="1GiB/s",
        host_cores=32,
        model_keys="",
    )
    links = f'gpu_link = "{gpu_link}"\ncompute_network = "{compute_network}"\n'
    path = tmp_path / "peer.toml"
    path.write_text(
        "peer_loading = true\n" + text.replace("host_cores = 32\n", f"host_cores = 32\n{links}")
    )
    config = read_config(path)
    trace = sorted(trace)
    sim = simulate(config, trace, policy, seed=3, check=True)
    log = sim.cluster.log.frame()
    peer = log[log["tier"] == "peer"]
    target(float(peer["chain"].value_counts().max()) if len(peer) else 0.0)
    t = sim.table
    assert (t.status == 1).all()
    np.testing.assert_allclose(t.generated, t.output_tokens, rtol=1e-9)
    assert sim.loads_by_tier["peer"] == len(peer)
    assert (peer["source"] >= 0).all() and (peer["chain"] >= 0).all()
    check_timeline(t.frame(), log, config)
    again = simulate(config, trace, policy, seed=3)
    pd.testing.assert_frame_equal(t.frame(), again.table.frame())
