"""Shared by the calibration.validate tests: a fixed profile, the simulator's cluster with
it laid over, and the scheduler's books as a policy reads them."""

import json
from pathlib import Path

from calibration.validate.scenario import QUICK, Layout, Scenario, write_cluster
from calibration.validate.view import Books
from sim.config import read_config
from sim.spec import ClusterConfig

# This machine's figures, from quick measurements by hand (a fixed profile keeps the test
# from depending on how long `calibration.measure` takes).
DERIVED = {
    "ssd_read_bytes_per_s": 1.0e9,
    "dram_to_gpu_bytes_per_s": 2.5e9,
    "instance_startup_s": 2.3,
    "reference_model_bytes": 64000000,
    "decode_step_s": 0.0062,
    "decode_step_per_request_s": 0.0014,
    "recompute_tokens_per_s": 2313.0,
    "migration_fixed_s": 0.01,
    "migration_per_token_s": 0.0005,
}
MB = 10**6
MODELS = {"a": 40 * MB, "b": 60 * MB}


def write_profile(path: Path) -> Path:
    document = {"version": 1, "machine": {"description": "by hand"}, "derived": DERIVED}
    path.write_text(json.dumps(document))
    return path


def cluster_config(
    work: Path,
    sizes: dict[str, int] = MODELS,
    scenario: Scenario = QUICK,
    profile: Path | None = None,
) -> ClusterConfig:
    """The cluster the replay writes for the simulator, of models of `sizes` bytes, with
    `profile` (by default the fixed one) laid over it."""
    write_cluster(scenario, Layout(work, work), sizes)
    return read_config(work / "cluster.toml", profile or write_profile(work / "profile.json"))


def books(
    config: ClusterConfig,
    servers: int = 3,
    dram_bytes: int = 100 * MB,
    remote: bool = False,
    placement: dict[str, list[int]] | None = None,
    ssd_bytes: int = sum(MODELS.values()),
) -> tuple[Books, list[tuple[str, int, str]]]:
    """Books of `servers` one-GPU servers holding models "a" and "b" on every SSD, or as
    `placement` says (a remote store holding them all, if `remote`); and the evictions,
    as (tier, server, model)."""
    evicted: list[tuple[str, int, str]] = []
    placement = placement or {name: list(range(servers)) for name in MODELS}
    caches = (dram_bytes, ssd_bytes)
    book = Books(
        servers, 1, MODELS, placement, caches, remote, config, lambda *e: evicted.append(e)
    )
    return book, evicted
