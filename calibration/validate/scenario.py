"""The cluster both sides replay: real checkpoints on disk, a short trace, the sim's TOML.

Two servers with one "GPU" each (the CPU here). Each server's "SSD" is a directory on
disk holding a copy of every checkpoint, so there is no remote tier; its DRAM cache is a
directory on /dev/shm (memory: the real loader maps a checkpoint found there), LRU like
the simulator's, its capacity in bytes. Three `calibration.migration.model`
decoders of different sizes, seeded random weights. The simulator gets the same cluster
as a TOML file: weights = the real blobs' bytes, one checkpoint copy on every server's
SSD, the same batch size, keep-alive and DRAM size, and one host for all the servers (they
share this machine's cores); the profile supplies the rest.
"""

import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import tomli_w

import traces
from calibration.checkpoint.format import BLOB_NAME
from calibration.checkpoint.pagecache import make_cold
from calibration.migration.model import ModelConfig, Transformer, save_model
from thaw_kernel import seeds
from traces.generate import synthesize
from traces.writer import write_canonical


def _model(layers: int, hidden: int, intermediate: int) -> ModelConfig:
    return ModelConfig(
        layers=layers,
        hidden=hidden,
        heads=8,
        kv_heads=4,
        intermediate=intermediate,
        vocab=4096,
        max_positions=512,
    )


# Catalog order is popularity order (Zipf). Sizes: about 38, 64 and 130 MB of fp32.
MODELS = {
    "small": _model(4, 384, 1024),
    "medium": _model(4, 512, 1408),
    "large": _model(6, 640, 1728),
}
MAX_INPUT, MAX_OUTPUT = 256, 128  # within max_positions


@dataclass(frozen=True)
class Scenario:
    requests: int
    rate: float  # requests per second, Poisson
    servers: int = 2
    gpus: int = 1
    max_batch: int = 4
    # Short enough that most requests start cold: the median then falls inside the cold
    # mode (seconds), not on the edge between it and the warm one (tens of ms), where its
    # relative error would measure the warm share rather than any timing.
    keep_alive_s: float = 1.0
    dram_bytes: int = 200 * 10**6  # two of the three checkpoints at most
    tokens: str = "lognormal:48,0.6,24,0.6"

    def __post_init__(self) -> None:
        if self.gpus != 1:  # the books, the view's load estimates and the replay assume it
            raise ValueError("the real replay runs one GPU per server")


QUICK = Scenario(requests=30, rate=1.0)
FULL = Scenario(requests=90, rate=1.0)


@dataclass(frozen=True)
class Layout:
    """Where everything of one validation lives."""

    work: Path  # on disk: the SSD directories, the trace, the cluster TOML
    dram: Path  # on /dev/shm: the DRAM cache directories

    def ssd(self, server: int, model: str) -> Path:
        return self.work / f"ssd{server}" / model

    def dram_copy(self, server: int, model: str) -> Path:
        return self.dram / f"dram{server}" / model

    @property
    def trace(self) -> Path:
        return self.work / "trace.csv"

    @property
    def cluster(self) -> Path:
        return self.work / "cluster.toml"


def write_checkpoints(scenario: Scenario, layout: Layout) -> dict[str, int]:
    """Every model's checkpoint on every server's SSD, on the disk and out of the page
    cache (so no replayed load waits for their write-back); its blob's bytes by name."""
    sizes = {}
    for seed, (name, config) in enumerate(MODELS.items()):
        first = layout.ssd(0, name)
        first.parent.mkdir(parents=True, exist_ok=True)
        save_model(Transformer.random(config, seed), first)
        for server in range(1, scenario.servers):
            shutil.copytree(first, layout.ssd(server, name))
        sizes[name] = (first / BLOB_NAME).stat().st_size
    for server in range(scenario.servers):  # written back and cold before the replay
        for name in MODELS:
            make_cold(str(layout.ssd(server, name) / BLOB_NAME))
    return sizes


def write_trace(scenario: Scenario, layout: Layout, seed: int) -> pd.DataFrame:
    """A Poisson, Zipf-popular trace of short requests, seeded; also written as CSV."""
    frame = synthesize(
        seeds.rng(seed, "trace"),
        list(MODELS),
        rate=scenario.rate,
        count=scenario.requests,
        tokens=scenario.tokens,
        reference=traces.reference_tokens,
    )
    frame["input_tokens"] = np.minimum(frame["input_tokens"], MAX_INPUT)
    frame["output_tokens"] = np.minimum(frame["output_tokens"], MAX_OUTPUT)
    write_canonical(frame, layout.trace)
    return frame


def write_cluster(scenario: Scenario, layout: Layout, sizes: dict[str, int]) -> None:
    """The simulator's description of the same cluster (the profile fills in speeds)."""
    everywhere = list(range(scenario.servers))
    table = {
        "keep_alive_s": scenario.keep_alive_s,
        "instance_startup_s": 1.0,
        "servers": [
            {
                "name": "replay",
                "count": scenario.servers,
                "gpus": scenario.gpus,
                "gpu_memory": "16GiB",
                "dram": scenario.dram_bytes,
                "ssd": sum(sizes.values()),
                "ssd_read": "1GB/s",
                "network": "1GB/s",  # unused: every checkpoint is on every SSD
                "pcie": "4GB/s",
                # Every replayed server runs on this one machine: their start-ups share its
                # cores (the profile's `host_cores`), as the real ones do.
                "servers_per_host": scenario.servers,
            }
        ],
        "models": {
            name: {
                "weights": size,
                "gpus": 1,
                "prefill_tokens_per_s": 1000.0,
                "decode_step_s": 0.01,
                "max_batch": scenario.max_batch,
                "ssd_servers": everywhere,
            }
            for name, size in sizes.items()
        },
    }
    text = "# Written by python -m calibration.validate; speeds come from --profile.\n"
    layout.cluster.write_text(text + tomli_w.dumps(table))
