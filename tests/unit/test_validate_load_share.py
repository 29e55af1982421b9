"""The share of cold TTFT spent loading, on a real replay and a simulated run built by hand."""

import pandas as pd
import pytest

from calibration.validate.loads import load_share, load_share_sim
from calibration.validate.records import Records


def _replay() -> Records:
    """Instance 0 loads from SSD over 1-4 s; A starts it, B joins it mid-load, C finds it
    ready. Instance 1 loads from DRAM over 10-10.1 s; D queued for a GPU from 8 to 9 s."""
    records = Records(n=4)
    records.created("m", 0, "ssd")
    records.created("m", 1, "dram")
    for k, (started, loaded, ready) in enumerate([(1.0, 4.0, 4.1), (10.0, 10.1, 10.2)]):
        records.instance_event(k, "started", started)
        records.instance_event(k, "loaded", loaded)
        records.instance_event(k, "ready", ready)
    # (arrival, placed, instance, first token)
    for i, (arrival, placed, instance, first) in enumerate(
        [(0.5, 0.5, 0, 4.2), (2.0, 2.0, 0, 4.3), (5.0, 5.0, 0, 5.1), (8.0, 9.0, 1, 10.3)]
    ):
        records.arrival[i] = arrival
        records.placed(i, placed, records.instances[instance].server, "ssd", instance)
        records.first_token(i, first)
    return records


def test_every_cold_request_counts_the_part_of_its_ttft_its_instance_spent_loading():
    records = _replay()
    # A: 3.0 s of its 3.7 loading (1-4 s); B: 2.0 of 2.3 (2-4 s); C is warm, left out;
    # D: 0.1 of 2.3 (its queue and its instance's process start count against it).
    share = load_share(records, records.frame())
    assert share == pytest.approx((3.0 + 2.0 + 0.1) / (3.7 + 2.3 + 2.3), rel=1e-12)


def test_no_cold_request_gives_no_share():
    records = _replay()
    requests = records.frame()
    requests["startup_s"] = 0.0
    assert load_share(records, requests) is None


def test_the_simulated_share_counts_each_load_up_to_its_instances_warm_up():
    # Instance 0 ready at 4.1 after a 0.1 s warm-up: loading over 1-4 s (load_s 3.0);
    # instance 1 ready at 10.2: loading over 10-10.1 s. The same four requests as above.
    # Instance 0 also slept and woke (an asleep row, then a second awake period without a
    # load): only its first awake period counts.
    instances = pd.DataFrame(
        {
            "instance": [0, 1, 0, 0],
            "ready_s": [4.1, 10.2, float("nan"), 20.0],
            "load_s": [3.0, 0.1, float("nan"), float("nan")],
            "asleep": [False, False, True, False],
        }
    )
    requests = pd.DataFrame(
        {
            "arrival_s": [0.5, 2.0, 5.0, 8.0],
            "ttft_s": [3.7, 2.3, 0.1, 2.3],
            "startup_s": [3.6, 2.1, 0.0, 1.2],
            "instance": [0, 0, 0, 1],
        }
    )
    share = load_share_sim(requests, instances, warmup_s=0.1)
    assert share == pytest.approx((3.0 + 2.0 + 0.1) / (3.7 + 2.3 + 2.3), rel=1e-12)
    # A request on an instance the log does not have is left out, not an error.
    requests.loc[1, "instance"] = 7
    share = load_share_sim(requests, instances, warmup_s=0.1)
    assert share == pytest.approx((3.0 + 0.1) / (3.7 + 2.3), rel=1e-12)
    requests["startup_s"] = 0.0
    assert load_share_sim(requests, instances, warmup_s=0.1) is None
