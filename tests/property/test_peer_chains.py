"""Property tests of peer loading: bursts of starts on small clusters with peer loading
on form multicast chains (receivers joining at any point of the stream, members pinned,
idle sources woken), and whatever the draw the books hold after every event (`--check`),
every request ends with all its tokens, the timeline agrees with the instance log, and a
fixed seed gives identical results. Each trace holds bursts of one request repeated (starts
of one model at once, which a chain serves), the search is steered towards long chains,
and a run of the test in which too few examples loaded from a peer fails."""

import numpy as np
import pandas as pd
import pytest
from conftest import TINY, simulate
from hypothesis import given, settings, target
from hypothesis import strategies as st
from timeline import check_timeline

from policies import policy_names
from sim.config import read_config
from tests.property.requests import Row, request_lists, request_rows

LINKS = ["1GiB/s", "2GiB/s", "4GiB/s", "8GiB/s"]

rows = request_lists(max_output=200, max_size=40)
# Up to three bursts: one request, sent two to eight times at once.
bursts = st.lists(st.tuples(request_rows(200), st.integers(2, 8)), min_size=1, max_size=3)
# Of the examples drawn, the share that must load from a peer. One server of one GPU
# never can; about seven in ten do (of 25, never fewer than 12 in 25 runs of the test).
PEER_SHARE = 0.3


@pytest.mark.parametrize("policy", policy_names())
def test_chains_keep_the_books(tmp_path, policy):
    peered: list[int] = []  # per example, the loads from a peer

    @settings(derandomize=True)  # the share is of a fixed draw: it cannot fall short by chance
    @given(
        trace=rows,
        burst=bursts,
        count=st.integers(1, 4),
        gpus=st.integers(1, 4),
        max_batch=st.integers(1, 2),
        keep_alive=st.sampled_from([0.0, 0.5, 8.0]),
        gpu_link=st.sampled_from(LINKS),
        compute_network=st.sampled_from(LINKS),
        ssd=st.sampled_from(["[]", "[0]"]),
    )
    def chains(
        trace: list[Row],
        burst: list[tuple[Row, int]],
        count: int,
        gpus: int,
        max_batch: int,
        keep_alive: float,
        gpu_link: str,
        compute_network: str,
        ssd: str,
    ) -> None:
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
        trace = sorted(trace + [row for row, times in burst for _ in range(times)])
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
        peered.append(len(peer))

    chains()
    loaded = sum(n > 0 for n in peered)
    assert loaded >= max(1.0, PEER_SHARE * len(peered)), (loaded, len(peered))
