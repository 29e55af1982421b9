"""The placement-policy interface: a pure decision over a read-only view of the cluster.

When a request finds no warm instance of its model with room, the simulator asks the
policy where to start a new instance (or, for a policy that weighs wakes, whether to wake
a sleeping engine instead). A policy never touches SimPy or mutates the
cluster; it reads the `ClusterView` and returns a decision, so it can be unit-tested on a
hand-built view. Policies register themselves by name; `policies/__init__.py` imports
every module of the package, so adding a policy is adding one file.
"""

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import Enum
from typing import ClassVar, Protocol

import numpy as np

from thaw_kernel.registry import Registry
from thaw_kernel.stages import Step
from thaw_kernel.tiers import CACHE_TIERS


@dataclass(frozen=True)
class Request:
    index: int
    model: str
    arrival_s: float
    input_tokens: int
    output_tokens: int
    preempted: bool = False  # put back in the queue by a preemption, progress lost


@dataclass(frozen=True)
class Move:
    """Live-migrate running instance `instance` to `destination`, freeing its GPUs."""

    instance: int
    destination: int


@dataclass(frozen=True)
class Start:
    """Start a new instance of the request's model on `server`.

    If the server lacks GPUs, the decision frees them: `migrate` moves running instances
    away (the new instance starts once they have left), `preempt` stops running
    instances at once and puts their requests back in the queue, their progress lost.
    `estimate_s` is the policy's own estimate of the startup time it expects (recorded
    next to the actual one so its error is measured); NaN when the policy makes none.
    """

    server: int
    estimate_s: float = float("nan")
    migrate: tuple[Move, ...] = ()
    preempt: tuple[int, ...] = ()


@dataclass(frozen=True)
class Wake:
    """Wake sleeping engine `instance` on `server`, one `ClusterView.sleeping` offers;
    `estimate_s` as in `Start` (the offer's `wake_s` for a policy that prices it)."""

    server: int
    instance: int
    estimate_s: float = float("nan")


@dataclass(frozen=True)
class Wait:
    """Leave the request queued; the simulator asks again when capacity frees up."""


Decision = Start | Wake | Wait


@dataclass(frozen=True)
class Running:
    """A busy warm instance that a decision may migrate or preempt."""

    id: int
    model: str
    gpus: int
    tokens: float  # context tokens (prompt + generated) whose KV cache it holds
    decoding: int  # requests in its decode batch
    step_s: float  # seconds per decode step at that batch size


@dataclass(frozen=True)
class Sleeping:
    """A sleeping engine that a wake could take now (`sim.model.sleepers`)."""

    server: int
    instance: int
    wake_s: float  # seconds until it would be ready: the swap, then the copy or reload


@dataclass(frozen=True)
class RoundCost:
    """A migration round over n tokens takes `per_token_s * n + fixed_s` seconds."""

    per_token_s: float
    fixed_s: float
    stop_tokens: float
    max_rounds: int

    def round_s(self, tokens: float) -> float:
        return self.per_token_s * tokens + self.fixed_s


class ClusterView(Protocol):
    """What a policy may read. Server ids are ints from 0."""

    @property
    def now(self) -> float: ...

    def steps(self, model: str) -> tuple[Step, ...]:
        """The start-up steps of an instance of `model` (`thaw_kernel.stages`): by default
        the fixed start-up cost, then the checkpoint load."""
        ...

    def gpus_needed(self, model: str) -> int: ...

    def candidate_count(self, model: str) -> int:
        """How many servers could start `model` now (enough available GPUs)."""
        ...

    def candidate(self, model: str, k: int) -> int:
        """The k-th such server, 0 <= k < candidate_count(model), in a fixed order."""
        ...

    def candidates(self, model: str) -> Iterable[int]: ...

    def least_occupied_candidate(self, model: str) -> int | None:
        """Among the servers that can start `model` now, the one with the fewest GPUs in
        use, lowest id on ties (as `least_occupied` over `candidates`, without the scan)."""
        ...

    def by_occupancy(self, model: str) -> Iterator[int]:
        """The servers that can start `model` now, fewest GPUs in use first, lowest id on
        ties, produced as they are read: the first few cost what they are, not a sort of
        the cluster."""
        ...

    def can_start(self, server: int, model: str) -> bool: ...

    def can_host(self, server: int, model: str) -> bool:
        """Whether `server` could ever run `model` (enough GPUs and GPU memory)."""
        ...

    def holders(self, model: str, tier: str) -> Iterable[int]:
        """Servers whose `tier` cache ("dram" or "ssd") holds the checkpoint of `model`."""
        ...

    def gpus_in_use(self, server: int) -> int:
        """GPUs held by busy, starting or loading instances (idle ones can be reclaimed)."""
        ...

    def available_gpus(self, server: int) -> int:
        """GPUs a new instance could have now: free ones plus those of idle instances."""
        ...

    def total_available_gpus(self) -> int:
        """Available GPUs summed over the cluster."""
        ...

    def load_s(self, server: int, model: str, delay: float) -> float:
        """Seconds a load of `model` on `server` beginning `delay` seconds from now would
        take, sharing links with the loads in flight (assuming no others begin)."""
        ...

    def copy_s(self, server: int, model: str) -> float:
        """Seconds an engine's copy of `model`'s checkpoint from host memory onto its GPUs
        on `server` takes (a `copy` stage: its own PCIe lanes, shared with nothing)."""
        ...

    def cpu_s(self, server: int, cpu_seconds: tuple[float, ...], delay: float) -> float:
        """Seconds until CPU-bound stages of these CPU-seconds, beginning together `delay`
        seconds from now on `server`, would all end, sharing its host cores with the other
        start-ups' CPU stages in flight and planned (assuming no others begin)."""
        ...

    def hidden_prefill_s(self, model: str, tokens: int, offset: float = 0.0) -> float:
        """Seconds of the prefill of a `tokens`-token prompt that a new instance's load can
        hide (execute-while-load, `sim.model.overlap`): all but its last layer; for a load
        that begins at `offset` of the weights (`load_offset`), the layers before the
        offset but the one just before it; 0 if the model's engine does not execute while
        loading."""
        ...

    def load_offset(self, server: int, model: str, delay: float) -> float:
        """Where in the weights (a fraction, in forward order) a load of `model` on `server`
        beginning `delay` seconds from now would begin: 0 unless it would join a multicast
        chain mid-stream (`sim.model.peer.chain`), then the stream's position by then
        (assuming no other join or re-timing)."""
        ...

    def running(self, server: int) -> list[Running]:
        """The busy warm instances on `server` that could be migrated or preempted."""
        ...

    def sleeping(self, model: str) -> list[Sleeping]:
        """Sleeping engines of `model` a wake could take now, the oldest per server, among
        the oldest few of the model; empty when engines do not sleep."""
        ...

    def round_cost(self, model: str, source: int, destination: int) -> RoundCost:
        """The cost model of migrating an instance of `model` between two servers."""
        ...


class Needs(Enum):
    """What `Policy.place` needs, at least, to decide anything but Wait: a promise that
    lets a queue skip the retries that would surely wait (`sim.queues.fifo`). Where the
    view lacks it, `place` returns Wait and draws no random number."""

    NOTHING = "nothing"  # no promise (it may make room by preempting, say)
    CANDIDATE = "candidate"  # a server that can start the model now
    # A candidate; or, for a migration, a server whose DRAM or SSD caches the checkpoint
    # (it makes room only on such a server) and as many available GPUs over the cluster
    # as the model needs (it moves GPUs in use, it frees none: `displacement`).
    GPUS = "gpus"

    @property
    def reads_cache(self) -> bool:
        """Whether `met` reads if some server caches the model."""
        return self is Needs.GPUS

    def met(self, view: ClusterView, model: str) -> bool:
        """Whether `view` offers it for `model`. The same for every model of equal GPUs
        that the same server groups can host (and cached somewhere or nowhere alike, if it
        `reads_cache`)."""
        if self is Needs.NOTHING:
            return True
        if view.total_available_gpus() < view.gpus_needed(model):
            return False  # and so no server has them
        if view.least_occupied_candidate(model) is not None:  # one look per server group
            return True
        return self.reads_cache and any(view.holders(model, tier) for tier in CACHE_TIERS)


class Policy(ABC):
    name: ClassVar[str]
    needs: ClassVar[Needs] = Needs.NOTHING  # what `place` needs to decide anything but Wait
    # Whether the policy weighs wakes against starts: then a request with no warm instance
    # to join comes to it even when an engine of its model sleeps, and it may answer
    # `Wake`; otherwise the simulator wakes the oldest engine it can before asking it.
    weighs_wakes: ClassVar[bool] = False

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    @abstractmethod
    def place(self, request: Request, view: ClusterView) -> Decision:
        """Where to start an instance for `request`, or Wait."""


_REGISTRY: Registry[Policy] = Registry("policy")
register = _REGISTRY.register  # class decorator: available as `--policy name`
get_policy = _REGISTRY.get


def policy_names() -> list[str]:
    return _REGISTRY.names()


def least_occupied(servers: Iterable[int], view: ClusterView) -> int | None:
    """The server with the fewest GPUs in use, lowest id on ties; None if there is none."""
    return min(servers, key=lambda s: (view.gpus_in_use(s), s), default=None)


def nearest(view: ClusterView, model: str) -> int | None:
    """Locality: among the servers that can start `model` now, the least occupied one whose
    DRAM cache holds the checkpoint, else whose SSD does, else any (a remote load)."""
    for tier in CACHE_TIERS:
        ready = (s for s in view.holders(model, tier) if view.can_start(s, model))
        server = least_occupied(ready, view)
        if server is not None:
            return server
    return view.least_occupied_candidate(model)
