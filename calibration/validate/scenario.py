"""The cluster both sides replay: real checkpoints on disk, a short trace, the sim's TOML.

Servers with one "GPU" each (the CPU here), all on this one machine. Each server's
"SSD" is a directory on disk; its DRAM cache is a directory on /dev/shm (memory: the
real loader maps a checkpoint found there), LRU like the simulator's, its capacity in
bytes. Three `calibration.migration.model` decoders of different sizes, seeded random
weights. Two scenarios:

- `startup` (the default): small checkpoints, a copy of each on every SSD, no remote
  tier: a cold start is mostly the engine's own start-up.
- `tiers`: each checkpoint padded with a `ballast` tensor to 1-2 GB (every byte is
  loaded at each cold start; the engine drops the ballast and computes with the
  decoder), one SSD copy of each, SSDs of a fixed size (LRU), a remote object store on
  loopback (`calibration.remote`) from which a cold start downloads the checkpoint into
  its server's SSD and then loads it, and on each server a checkpoint store that reads
  the checkpoint into DRAM while the engine starts, as ServerlessLLM's does: a cold
  start is mostly the load.
- `tiers-serial`: `tiers` without the checkpoint stores: each engine loads its own
  checkpoint once its runtime has started, the load after the start-up.

The simulator gets the same cluster as a TOML file: weights = the real blobs' bytes
(`compute_bytes` = the decoder's own, which its inference speed scales by), the same
placement, batch size, keep-alive, DRAM and SSD sizes, and one host for all the servers
(they share this machine's cores and its one disk); the profile supplies the rest.
"""

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
import tomli_w
import torch

import traces
from calibration.checkpoint.format import BLOB_NAME
from calibration.checkpoint.pagecache import make_cold
from calibration.checkpoint.writer import write_checkpoint
from calibration.measure.disk_readers import SHM
from calibration.measure.inference_probe import model_bytes
from calibration.migration.model import ModelConfig, Transformer
from calibration.validate.instance_process import BALLAST
from thaw_kernel import seeds
from thaw_kernel.errors import InputError
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
# `ballast`: the padding tensor of a `tiers` checkpoint, loaded and then dropped.
MODELS = {
    "small": _model(4, 384, 1024),
    "medium": _model(4, 512, 1408),
    "large": _model(6, 640, 1728),
}
MAX_INPUT, MAX_OUTPUT = 256, 128  # within max_positions
GB = 10**9
# What a checkpoint's files hold beyond its asked bytes, at most: each tensor aligned to
# 4 KiB in the blob, and the JSON index beside it.
OVER_ASKED = 10**6


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
    name: str = "startup"
    # Each model's checkpoint bytes, in catalog order, padded with `BALLAST`; () for the
    # decoders' own.
    checkpoint_bytes: tuple[int, ...] = ()
    # SSD copies of each checkpoint, round-robin by catalog rank; 0 for one on every SSD.
    ssd_copies: int = 0
    ssd_bytes: int = 0  # each SSD's capacity; 0 for all the checkpoints
    remote_rate: float = 0.0  # each server's bytes/s from the remote store; 0: none
    # The checkpoint `calibration.measure` times the disk on (its `--size`); 0 for its
    # quick default. Loads of gigabytes run at the disk's steady rate, not a small file's.
    probe_bytes: int = 0
    # A checkpoint store per server (`calibration.validate.store_process`) reads a cold
    # start's checkpoint from SSD or the remote store into DRAM while its engine starts,
    # as ServerlessLLM's does; else the engine loads it itself once it has started.
    store: bool = False

    def __post_init__(self) -> None:
        if self.gpus != 1:  # the books, the view's load estimates and the replay assume it
            raise ValueError("the real replay runs one GPU per server")

    @property
    def remote(self) -> bool:
        return self.remote_rate > 0

    @property
    def shm_bytes(self) -> int:
        """The most a replay holds on /dev/shm at once: the remote store's copy of every
        checkpoint, each server's DRAM cache full (nothing more with a store, whose pages
        the cached copies share: `share_store_pages`), and on each server a load in
        flight, which fills a DRAM cache file as it reads; each checkpoint with the
        `OVER_ASKED` its files add; 0 for the decoders' own checkpoints, tens of MB."""
        if not self.checkpoint_bytes:
            return 0
        sizes = [size + OVER_ASKED for size in self.checkpoint_bytes]
        store = sum(sizes) if self.remote else 0
        cached = 0 if self.remote else self.dram_bytes
        return store + self.servers * (cached + max(sizes))

    def ssd_servers(self, rank: int) -> list[int]:
        """The servers whose SSD holds the checkpoint of the model of catalog `rank`."""
        if not self.ssd_copies:
            return list(range(self.servers))
        copies = min(self.ssd_copies, self.servers)
        return sorted({(rank * copies + j) % self.servers for j in range(copies)})


QUICK = Scenario(requests=30, rate=1.0)
FULL = Scenario(requests=90, rate=1.0)


def tiers_sized(checkpoint_bytes: tuple[int, ...]) -> dict:
    """The tiers caches for checkpoints of these sizes (catalog order, the least popular
    the smallest): a DRAM cache that holds only the smallest, SSDs that hold the largest
    beside the smallest but not beside the second; each with a tenth of the smallest
    to spare."""
    largest, second, smallest = sorted(checkpoint_bytes, reverse=True)
    spare = smallest // 10
    if second <= smallest + spare:
        raise ValueError("the second checkpoint must exceed the smallest by over a tenth")
    return dict(
        checkpoint_bytes=checkpoint_bytes,
        ssd_bytes=largest + smallest + spare,
        dram_bytes=smallest + spare,
    )


# Load-dominated: 1-2 GB checkpoints, the most popular model's the largest, so that a
# cold start is mostly its load whatever the trace's mix; a DRAM cache holding only the
# least popular one; SSDs that hold the largest beside the smallest but not beside the
# second (so the two popular models, placed on different servers, are fetched from the
# remote store wherever else they start). 100 requests a policy in one replay (a tail
# percentile over 100 requests, not 30) at 0.75 a second, so that a quick run (three
# replays of about 135 s, and the profile) ends within 12 minutes: at 0.6 a second one
# seed's trace lasted 197 s, and the run 13 minutes. The store's rate (450 MB/s per
# server, about a third of the disk's) and no keep-alive are the setting, of keep-alives
# of 0 and 1 s and stores of 300-600 MB/s at that rate, in which the simulator's own p50
# and p99 move least when every measured speed moves 5%, with a simulated loading share
# of the cold TTFT of at least 0.6 (`benchmarks/tiers_conditioning.py`; docs/
# calibration.md, "The tiers scenario"): a percentile that moves by a fifth for a 5%
# error of its inputs cannot be validated.
TIERS = dict(
    name="tiers",
    store=True,
    ssd_copies=1,
    remote_rate=450e6,
    probe_bytes=GB,
    keep_alive_s=0.0,
    tokens="lognormal:16,0.5,8,0.5",
    **tiers_sized((2 * GB, 3 * GB // 2, GB)),
)
TIERS_QUICK = Scenario(requests=100, rate=0.75, servers=2, **TIERS)
TIERS_FULL = Scenario(requests=200, rate=0.9, servers=3, **TIERS)
SERIAL = dict(name="tiers-serial", store=False)
SCENARIOS = {
    "startup": (QUICK, FULL),
    "tiers": (TIERS_QUICK, TIERS_FULL),
    "tiers-serial": (replace(TIERS_QUICK, **SERIAL), replace(TIERS_FULL, **SERIAL)),
}


@dataclass(frozen=True)
class Layout:
    """Where everything of one validation lives."""

    work: Path  # on disk: the SSD directories, the trace, the cluster TOML
    dram: Path  # on /dev/shm: the DRAM cache directories, and the remote store's files

    def ssd(self, server: int, model: str) -> Path:
        return self.work / f"ssd{server}" / model

    def dram_copy(self, server: int, model: str) -> Path:
        return self.dram / f"dram{server}" / model

    @property
    def store(self) -> Path:
        """The remote store's root: one directory per checkpoint."""
        return self.dram / "store"

    @property
    def trace(self) -> Path:
        return self.work / "trace.csv"

    @property
    def cluster(self) -> Path:
        return self.work / "cluster.toml"


@contextmanager
def workspace(disk: Path, prefix: str, shm_bytes: int = 0) -> Iterator[Layout]:
    """Scratch space for a validation: the SSDs in a new directory on `disk`, the DRAM
    caches in one on /dev/shm (memory), both named `prefix`..., and removed on the way
    out, whatever the way. Refused at once where the DRAM side has less free than
    `shm_bytes` (`Scenario.shm_bytes`), rather than running out in the middle."""
    if not disk.is_dir():
        raise InputError(f"--dir {disk}: no such directory")
    try:
        work = Path(tempfile.mkdtemp(prefix=prefix, dir=disk))
    except OSError as err:
        raise InputError(f"--dir {disk}: cannot write there: {err.strerror}") from None
    try:
        dram = Path(tempfile.mkdtemp(prefix=prefix, dir=SHM if SHM.is_dir() else work))
        try:
            _require_room(dram, shm_bytes)
            yield Layout(work, dram)
        finally:
            shutil.rmtree(dram, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _require_room(directory: Path, needed: int) -> None:
    free = shutil.disk_usage(directory).free
    if free < needed:
        raise InputError(
            f"{directory.parent}: the scenario holds up to {needed / GB:.1f} GB there at once "
            f"(the remote store, the DRAM caches and a load in flight on each server), "
            f"and {free / GB:.1f} GB is free"
        )


def write_checkpoints(scenario: Scenario, layout: Layout) -> dict[str, int]:
    """Every model's checkpoint where the scenario places it at the start (and in the
    remote store, if there is one), on the disk and out of the page cache (so no replayed
    load waits for their write-back); its blob's bytes by name."""
    sizes = {}
    for rank, (name, config) in enumerate(MODELS.items()):
        first = layout.store / name if scenario.remote else layout.ssd(0, name)
        first.parent.mkdir(parents=True, exist_ok=True)
        _save(Transformer.random(config, rank), _ballast(scenario, rank, config), first)
        for server in scenario.ssd_servers(rank):
            if layout.ssd(server, name) != first:
                layout.ssd(server, name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copytree(first, layout.ssd(server, name))
        sizes[name] = (first / BLOB_NAME).stat().st_size
    for rank, name in enumerate(MODELS):  # written back and cold before the replay
        for server in scenario.ssd_servers(rank):
            make_cold(str(layout.ssd(server, name) / BLOB_NAME))
    return sizes


def share_store_pages(layout: Layout, server: int, model: str) -> None:
    """Make `server`'s DRAM copy of `model` share the remote store's pages: the same bytes
    (the load that filled it read a copy of the store's), held once in this machine's
    memory, where the servers and the store of a real cluster each have their own. The
    load still wrote its own copy, as a real one does; on a CPU the instance that maps
    that copy keeps it until it stops."""
    blob = layout.dram_copy(server, model) / BLOB_NAME
    shared = blob.with_name(f"{BLOB_NAME}.shared")
    os.link(layout.store / model / BLOB_NAME, shared)
    os.replace(shared, blob)


def reset_ssds(scenario: Scenario, layout: Layout) -> None:
    """Every SSD as `write_checkpoints` left it, for the next replay: the copies a replay
    downloaded removed, those it evicted copied back from the remote store (written back
    and cold)."""
    if not scenario.remote:
        return  # nothing is downloaded or evicted: every SSD holds every checkpoint
    for rank, name in enumerate(MODELS):
        placed = scenario.ssd_servers(rank)
        for server in range(scenario.servers):
            copy = layout.ssd(server, name)
            if server not in placed:
                shutil.rmtree(copy, ignore_errors=True)
            elif not (copy / BLOB_NAME).exists():
                shutil.rmtree(copy, ignore_errors=True)
                shutil.copytree(layout.store / name, copy)
                make_cold(str(copy / BLOB_NAME))


def _ballast(scenario: Scenario, rank: int, config: ModelConfig) -> int:
    """The bytes of padding that bring the checkpoint of rank `rank` to its size."""
    if not scenario.checkpoint_bytes:
        return 0
    return max(0, scenario.checkpoint_bytes[rank] - decoder_bytes(config))


def decoder_bytes(config: ModelConfig) -> int:
    """The bytes of the decoder's own weights (what a forward pass reads)."""
    with torch.device("meta"):
        return model_bytes(Transformer(config))


def _save(model: Transformer, ballast: int, dst: Path) -> None:
    """The model's checkpoint, with `ballast` bytes of seeded noise after its weights."""
    tensors = dict(model.state_dict())
    if ballast:
        noise = np.random.default_rng(ballast).integers(0, 256, 1 << 24, np.uint8)
        block = torch.from_numpy(noise)
        tensors[BALLAST] = block.repeat(-(-ballast // block.numel()))[:ballast]
    write_checkpoint(tensors, dst)


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
    """The simulator's description of the same cluster (the profile fills in speeds, and
    the disk's and the remote store's bandwidths where it measured them)."""
    table: dict = {
        "keep_alive_s": scenario.keep_alive_s,
        "instance_startup_s": 1.0,
        "servers": [
            {
                "name": "replay",
                "count": scenario.servers,
                "gpus": scenario.gpus,
                "gpu_memory": "16GiB",
                "dram": scenario.dram_bytes,
                "ssd": scenario.ssd_bytes or sum(sizes.values()),
                "ssd_read": "1GB/s",
                # Unused without a remote store (every checkpoint on every SSD); else
                # the profile's measured rate of the store.
                "network": "1GB/s",
                "pcie": "4GB/s",
                # Every replayed server runs on this one machine: their start-ups share its
                # cores (the profile's `host_cores`), and their loads its one disk (the
                # profile's `host_disk_bytes_per_s`), as the real ones do.
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
                "ssd_servers": scenario.ssd_servers(rank),
            }
            | ({"compute_bytes": decoder_bytes(MODELS[name])} if scenario.checkpoint_bytes else {})
            for rank, (name, size) in enumerate(sizes.items())
        },
    }
    if scenario.remote:
        table["remote_download"] = True
    if scenario.store:  # the stores read while the engines start
        table["load_beside_startup"] = True
    text = "# Written by python -m calibration.validate; speeds come from --profile.\n"
    layout.cluster.write_text(text + tomli_w.dumps(table))
