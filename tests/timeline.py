"""Each request's timeline rebuilt from records the simulator keeps apart, and checked.

The request table splits a TTFT into queue, start-up and prefill; the instance log says,
separately, when each instance was given its GPUs, when its weights were loaded, from
which tier, and when it ended. Joined on the instance a request was placed on, the two must
tell one story, and every load must take at least what the hardware allows: a start-up
plus its bytes over the slowest link it crosses, exactly that when no other load shared
its link. A wrong join, a mis-recorded tier, a start-up charged twice or a link shared
with nobody slowing a load all fail here, where a check that TTFT equals the sum of its
parts cannot.
"""

import numpy as np
import pandas as pd

from sim.spec import ClusterConfig

EPS = 1e-9


def check_timeline(requests: pd.DataFrame, instances: pd.DataFrame, config: ClusterConfig) -> None:
    """Assert that `requests` (requests.parquet) and `instances` (instances.parquet) of a
    run of `config` agree, request by request and load by load."""
    check_loads(instances, config)
    check_requests(requests, instances.set_index("instance"), config)


def check_requests(requests: pd.DataFrame, instances: pd.DataFrame, config: ClusterConfig) -> None:
    """Requests served by one instance start to end: placed on it, first token once it was
    ready, done before it ended, prefill no faster than the model's rate."""
    done = requests[requests["status"] == "done"]
    assert (done["instance"] >= 0).all(), "a finished request names no instance"
    stayed = done[done["migrations"] == 0]
    own = instances.loc[stayed["instance"].to_numpy()]
    assert (own["server"].to_numpy() == stayed["server"].to_numpy()).all()

    placed = (stayed["arrival_s"] + stayed["queue_s"]).to_numpy()
    ready = own["ready_s"].to_numpy()
    waited = np.maximum(placed, ready) - placed
    np.testing.assert_allclose(stayed["startup_s"], waited, rtol=0, atol=EPS)

    cold = (stayed["tier"] != "warm").to_numpy()
    tiers = own["tier"].astype(str).to_numpy()
    assert (stayed["tier"].astype(str).to_numpy()[cold] == tiers[cold]).all()

    first = (stayed["arrival_s"] + stayed["ttft_s"]).to_numpy()
    end = (stayed["arrival_s"] + stayed["e2e_s"]).to_numpy()
    assert (first >= ready - EPS).all(), "a first token before its instance was ready"
    assert (end <= own["ended_s"].to_numpy() + EPS).all(), "served after its instance ended"

    rate = stayed["model"].astype(str).map(lambda m: config.models[m].prefill_tokens_per_s)
    fastest = stayed["input_tokens"].to_numpy() / rate.to_numpy()
    assert (stayed["prefill_s"].to_numpy() >= fastest - EPS).all(), "a prefill beat its rate"


def check_loads(instances: pd.DataFrame, config: ClusterConfig) -> None:
    """Every load took at least start-up + bytes / slowest link on its path, and exactly
    that when no other load on its server crossed the same shared link at the same time."""
    loaded = instances[instances["ready_s"].notna()]
    groups = [group for group in config.servers for _ in range(group.count)]
    start = loaded["allocated_s"].to_numpy() + config.instance_startup_s
    took = loaded["ready_s"].to_numpy() - loaded["allocated_s"].to_numpy()
    least = np.empty(len(loaded))
    for k, row in enumerate(loaded.itertuples()):
        group = groups[row.server]
        if str(row.tier) == "peer":  # over GPU links or the compute network, not PCIe
            fastest = max(row.gpus * group.gpu_link, group.compute_network)
            least[k] = config.instance_startup_s + config.models[row.model].weights / fastest
            continue
        link = {"dram": np.inf, "ssd": group.ssd_read, "remote": group.network}[str(row.tier)]
        bottleneck = min(row.gpus * group.pcie, link)
        least[k] = config.instance_startup_s + config.models[row.model].weights / bottleneck
    assert (took >= least * (1 - EPS)).all(), "a load beat its slowest link"

    alone = ~_shared(loaded, start)
    np.testing.assert_allclose(took[alone], least[alone], rtol=1e-9)


def _shared(loaded: pd.DataFrame, start: np.ndarray) -> np.ndarray:
    """Whether each load's transfer overlapped another's over the same shared link of the
    same server (DRAM loads cross only their own PCIe lanes, so never)."""
    server = loaded["server"].to_numpy()
    tier = loaded["tier"].astype(str).to_numpy()
    end = loaded["ready_s"].to_numpy()
    shared = np.zeros(len(loaded), dtype=bool)
    for k in range(len(loaded)):
        if tier[k] == "dram":
            continue
        if tier[k] == "peer":  # a chain: its bound is checked by hand (test_peer_loading)
            shared[k] = True
            continue
        others = (server == server[k]) & (tier == tier[k]) & (np.arange(len(loaded)) != k)
        shared[k] = bool((others & (start < end[k]) & (end > start[k])).any())
    return shared
