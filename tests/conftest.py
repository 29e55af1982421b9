"""Shared helpers: small clusters written as TOML, and traces written as rows."""

import os
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import settings

from sim.config import read_config
from sim.engine.simulator import Simulation
from sim.spec import ClusterConfig
from thaw_kernel import seeds

# Property tests draw as many examples as the profile says: "ci" (the default) keeps the
# suite fast; THAW_HYPOTHESIS=thorough searches twenty times longer.
settings.register_profile("ci", max_examples=25, deadline=None)
settings.register_profile("thorough", max_examples=500, deadline=None)
settings.load_profile(os.environ.get("THAW_HYPOTHESIS", "ci"))

# One server, two GPUs, bandwidths and sizes that are exact in binary floating point, so
# hand-computed times compare with ==.
TINY = """
keep_alive_s = {keep_alive}
instance_startup_s = 2.0

[[servers]]
name = "tiny"
count = {count}
gpus = {gpus}
gpu_memory = "16GiB"
dram = "8GiB"
ssd = "64GiB"
ssd_read = "2GiB/s"
network = "{network}"
pcie = "4GiB/s"
host_cores = {host_cores}

[models.a]
weights = "4GiB"
gpus = 1
prefill_tokens_per_s = 1024.0
decode_step_s = 0.125
decode_step_per_request_s = 0.125
max_batch = {max_batch}
ssd_servers = {ssd_a}
{model_keys}

[models.b]
weights = "4GiB"
gpus = 1
prefill_tokens_per_s = 1024.0
decode_step_s = 0.125
max_batch = {max_batch}
ssd_servers = {ssd_b}
{model_keys}
"""

GiB = 2**30


def tiny_config(
    tmp_path: Path,
    *,
    count: int = 1,
    gpus: int = 2,
    max_batch: int = 4,
    ssd_a: str = "[]",
    ssd_b: str = "[]",
    keep_alive: float = 8.0,
    network: str = "1GiB/s",
    host_cores: float = 32,
    servers_per_host: int = 1,
    company_slowdown: float = 0.0,
    model_keys: str = "",
    extra: str = "",
) -> ClusterConfig:
    """The TINY cluster; `model_keys` (TOML lines) go into both models' tables, `extra`
    at the end of the file."""
    path = tmp_path / "tiny.toml"
    text = TINY.format(
        count=count,
        gpus=gpus,
        max_batch=max_batch,
        ssd_a=ssd_a,
        ssd_b=ssd_b,
        keep_alive=keep_alive,
        network=network,
        # The group's last two keys (TINY's own placeholders stay as other tests fill them).
        host_cores=f"{host_cores}\nservers_per_host = {servers_per_host}"
        + (f"\nstartup_company_slowdown = {company_slowdown}" if company_slowdown else ""),
        model_keys=model_keys,
    )
    path.write_text(text + extra)
    return read_config(path)


def simulate(
    config: ClusterConfig,
    rows: list[tuple[float, str, int, int]],
    policy: str = "locality",
    seed: int = 0,
    check: bool = False,
) -> Simulation:
    """Run `rows` of (arrival_s, model, input_tokens, output_tokens) to completion,
    auditing the books after every event if `check`."""
    trace = pd.DataFrame(rows, columns=["arrival_s", "model", "input_tokens", "output_tokens"])
    sim = Simulation(config, trace, policy, seeds.rng(seed, "policy"), check=check)
    sim.run()
    return sim


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked `cuda` skip where torch sees no GPU."""
    marked = [item for item in items if item.get_closest_marker("cuda")]
    if not marked:
        return
    import torch  # here, not above: most runs of the suite's simulator tests never need it

    if not torch.cuda.is_available():
        for item in marked:
            item.add_marker(pytest.mark.skip(reason="needs a CUDA GPU"))


@pytest.fixture
def repo_root() -> Path:
    return Path(__file__).resolve().parent.parent
