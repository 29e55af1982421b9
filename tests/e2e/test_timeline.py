"""Request timelines rebuilt from the instance log agree with the request table
(tests/timeline.py), under every policy, on the contended scenario."""

import pytest
from timeline import check_timeline

from policies import policy_names
from sim.api import run
from sim.config import read_config


@pytest.mark.parametrize("policy", policy_names())
def test_requests_and_instances_tell_one_story(request, policy):
    config = read_config(request.config.rootpath / "configs" / "contended.toml")
    result = run(policy, cluster=config, max_requests=3000)
    assert result.summary["completed"] == 3000
    check_timeline(result.requests, result.instances, config)
    loads = result.instances["ready_s"].notna()
    counted = result.instances[loads]["tier"].astype(str).value_counts().to_dict()
    assert counted == {k: v for k, v in result.summary["loads_by_tier"].items() if v}
    gpu_seconds = (result.instances["gpus"] * result.instances.eval("ended_s - allocated_s")).sum()
    assert gpu_seconds == pytest.approx(result.summary["gpu_seconds"], rel=1e-12)
