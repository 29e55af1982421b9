"""The frozen values a run is made of: server groups, the model catalog, live migration's
cost, how engines sleep, the keep-alive as chosen, and the cluster configuration that
holds them all.

The model, the engine and the policies' callers read these; only `sim.config` makes
them (from TOML, the command line or `sim.run`), so nothing below the reader parses text.
"""

from dataclasses import dataclass
from typing import Any

import tomli_w

from thaw_kernel.stages import Step, default_steps

# A model's transformer layers when its catalog entry states none: Llama-2-7B's and
# OPT-6.7B's 32 (`num_hidden_layers` in their model cards). Only execute-while-load uses it.
DEFAULT_LAYERS = 32
# A model's TTFT service-level objective when its catalog entry states none: a round
# figure, the order of a cold start from SSD of the default catalog's larger models.
DEFAULT_TTFT_SLO_S = 10.0


@dataclass(frozen=True)
class ServerGroup:
    """`count` identical servers. Sizes in bytes, bandwidths in bytes/s."""

    name: str
    count: int
    gpus: int
    gpu_memory: int
    dram: int
    ssd: int
    ssd_read: float
    network: float
    pcie: float
    host_cores: float  # effective CPU cores the CPU-bound start-up stages share (fluid)
    servers_per_host: int = 1  # consecutive servers whose start-ups share one host's cores
    # Peer loading only (docs/peer-loading.md): GPU-to-GPU per GPU, and the server's NIC on
    # the compute network (not the storage `network`); 0 while peer loading is off.
    gpu_link: float = 0.0
    compute_network: float = 0.0
    # The aggregate read bandwidth of the one disk a host's servers share (their SSD loads
    # and, with `remote_download`, their downloads' writes); 0: each server's SSD its own.
    host_disk: float = 0.0
    # The same disk's aggregate while two or more transfers cross it at once (a virtual
    # disk's concurrent streams may read less together than one alone); 0: `host_disk`.
    host_disk_shared: float = 0.0
    # The CPU-seconds per GB a load from SSD (its page faults, copies, checksums) and a
    # download from the remote tier take on the host's cores, beside its bytes on the
    # links; 0: loads take no CPU (docs/model.md).
    load_cpu_s_per_gb: float = 0.0
    download_cpu_s_per_gb: float = 0.0
    # The seconds per GB that deleting a checkpoint from the SSD (an eviction, or a
    # downloaded copy dropped after its load) holds the disk, as a file system that
    # discards freed blocks at once does; 0: deletions are free (docs/model.md).
    ssd_delete_s_per_gb: float = 0.0
    # A start-up's CPU stage asks 1 / (1 + this) of a core while any other CPU flow shares
    # its host (caches, memory bandwidth, SMT siblings: a stretch before the cores run
    # out); 0: it slows only once they do (docs/model.md).
    startup_company_slowdown: float = 0.0

    def can_host(self, gpus: int, weights: int) -> bool:
        """Whether one server of this group can run an instance needing `gpus` GPUs."""
        return self.gpus >= gpus and self.gpu_memory * gpus >= weights


@dataclass(frozen=True)
class ModelSpec:
    """A catalog entry: checkpoint size, GPUs per instance, inference speed, placement."""

    name: str
    weights: int
    gpus: int
    prefill_tokens_per_s: float
    decode_step_s: float
    decode_step_per_request_s: float
    max_batch: int
    ssd_servers: tuple[int, ...]
    ttft_slo_s: float = DEFAULT_TTFT_SLO_S  # what SLO attainment and `edf` measure against
    prefill_fixed_s: float = 0.0  # per forward pass, beside the per-token rate
    prefill_waits_for_step: bool = False  # a prefill waits for the decode step in progress
    engine: str = ""  # the start-up's stages (`ClusterConfig.engines`); "" for the default
    layers: int = DEFAULT_LAYERS  # the granularity of execute-while-load (`sim.model.overlap`)
    # An autoscaler's floor (as BlitzScale's minimum counts): instances started when the
    # run begins; the last `min_instances` never expire, though another model's start
    # may still take their GPUs.
    min_instances: int = 0
    # The bytes a forward pass reads, where the checkpoint carries more (0: all of it).
    compute_bytes: int = 0

    def decode_step(self, batch: int) -> float:
        """Seconds per decode step when `batch` requests decode together."""
        return self.decode_step_s + self.decode_step_per_request_s * (batch - 1)

    def prefill_s(self, tokens: int) -> float:
        """Seconds to prefill a prompt of `tokens` tokens."""
        return tokens / self.prefill_tokens_per_s + self.prefill_fixed_s

    def pcie_s(self, pcie: float) -> float:
        """Seconds its weights take across an instance's own PCIe lanes, `pcie` bytes/s
        per GPU (never shared: a GPU belongs to one instance), either way."""
        return self.weights / (self.gpus * pcie)


@dataclass(frozen=True)
class MigrationSpec:
    """Live migration's cost model: each round sends tokens and recomputes their KV cache.

    A round over n tokens takes `round_overhead_s + n * bytes_per_token / network +
    n / recompute rate`, the `a * n + b` of ServerlessLLM; the recompute rate is the
    model's prefill rate (recomputing a KV cache is a prefill). Rounds stop once a round
    saw fewer than `stop_tokens` new tokens, or after `max_rounds`.
    """

    bytes_per_token: float
    round_overhead_s: float
    stop_tokens: float
    max_rounds: int


@dataclass(frozen=True)
class SleepSpec:
    """How an engine sleeps (vLLM sleep mode, `sim.config.sleep`): level 1 moves its
    weights to DRAM, level 2 discards them; either way it keeps `gpu_memory` per GPU."""

    level: int  # 1: weights to DRAM; 2: weights discarded
    gpu_memory: int  # bytes per GPU an asleep engine keeps (context, graphs, allocator)


@dataclass(frozen=True)
class KeepAliveSpec:
    """A keep-alive policy as chosen (`NAME[:params]`), parsed once by
    `sim.keep_alive.parse_keep_alive`: the policy's name, its own parameters' values, and
    how long an expired instance sleeps before it stops (the `sleep=SECONDS` option every
    policy takes; 0: never)."""

    text: str  # as given, written back to config.toml and the summary
    name: str
    values: tuple[tuple[str, float], ...] = ()
    sleep_s: float = 0.0

    def __str__(self) -> str:
        return self.text


FIXED_KEEP_ALIVE = KeepAliveSpec("fixed", "fixed")


@dataclass(frozen=True)
class ClusterConfig:
    servers: tuple[ServerGroup, ...]
    models: dict[str, ModelSpec]  # in catalog (popularity) order
    keep_alive_s: float
    instance_startup_s: float
    zipf_exponent: float
    migration: MigrationSpec
    resolved: dict[str, Any]  # the normalised table, written back as config.toml
    queue: str = "fifo"  # the queue discipline (`sim.queues`)
    keep_alive: KeepAliveSpec = FIXED_KEEP_ALIVE  # the keep-alive policy (`sim.keep_alive`)
    engines: dict[str, tuple[Step, ...]] | None = None  # start-up steps by engine name
    peer_loading: bool = False  # load from warm instances' GPUs (docs/peer-loading.md)
    # Engines whose first prefill runs behind the load (`execute_while_load`, `sim.model.overlap`).
    overlapped: frozenset[str] = frozenset()
    # Engines with a `copy` stage: their load reads into host memory, then they copy.
    copying: frozenset[str] = frozenset()
    # How engines sleep (`sim.config.sleep`): by engine name, "" for the top-level table.
    sleep: dict[str, SleepSpec] | None = None
    # A start from the remote tier downloads the checkpoint to SSD, then loads it from there
    # (`sim.model.loading`); otherwise it streams from the remote store to the GPUs.
    remote_download: bool = False
    # A start's load runs beside its start-up, not after it: a per-server checkpoint store
    # reads the checkpoint into host memory while the engine process starts, and the
    # engine then copies it onto its GPUs (`load_beside_startup`).
    load_beside_startup: bool = False

    def sleep_of(self, model: str) -> SleepSpec | None:
        """How an instance of `model` sleeps: its engine's table, else the top-level one."""
        if not self.sleep:
            return None
        engine = self.models[model].engine
        return self.sleep.get(engine) if engine in self.sleep else self.sleep.get("")

    def pipelined(self, model: str) -> bool:
        """Whether the prefill of the request that starts an instance of `model` runs
        layer by layer behind its checkpoint load."""
        return self.models[model].engine in self.overlapped

    def steps(self, model: str) -> tuple[Step, ...]:
        """The start-up steps of `model`: its engine's, else the fixed cost and the load."""
        engine = self.models[model].engine
        if engine and self.engines:
            return self.engines[engine]
        return default_steps(self.instance_startup_s, self.load_beside_startup)

    def copies(self, model: str) -> bool:
        """Whether `model`'s engine copies its checkpoint from host memory onto its GPUs
        itself, after its load (a `copy` stage): the load then reads into host memory."""
        engine = self.models[model].engine
        if engine and self.engines:
            return engine in self.copying
        return self.load_beside_startup

    @property
    def server_count(self) -> int:
        return sum(group.count for group in self.servers)

    def to_toml(self) -> str:
        return tomli_w.dumps(self.resolved)
