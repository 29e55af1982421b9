"""The queue-discipline interface: how waiting requests get GPUs as they free up.

Placement decides where a new instance starts; the queue discipline decides which
waiting request is offered the cluster next, and what the others may see of it meanwhile
(`view`). The simulator hands it every request that finds no instance to join and no
server to start one on (`arrive`), every request a preemption puts back (`requeue`), and
asks it to retry whenever capacity frees up (`drain`); a discipline that keeps no
waiters hands a request back as turned away (`turn_away`). So that a retry may skip the
models that would surely wait, it says what the policy needs to place (`Needs`), which
models' instances have room again (`room_opened`) and which models became cached or
uncached (`cached_changed`). Disciplines register by name, one module each;
`sim/queues/__init__.py` imports them all.
"""

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from policies.base import ClusterView, Needs
from thaw_kernel.registry import Registry

if TYPE_CHECKING:
    from sim.model.cluster import Cluster
    from sim.spec import ModelSpec

# Place request i of a model now (join an instance or start one): True if it was placed.
Route = Callable[[int, str], bool]
# Request i ends unserved: it will never be placed.
TurnAway = Callable[[int], None]


def _keeps_every_request(i: int) -> None:
    raise RuntimeError(f"request #{i} was turned away by a discipline that keeps them all")


class QueueDiscipline(ABC):
    name: ClassVar[str]

    def __init__(
        self,
        route: Route,
        cluster: "Cluster",
        models: Mapping[str, "ModelSpec"],
        arrival: np.ndarray,
        needs: Needs = Needs.NOTHING,
        turn_away: TurnAway = _keeps_every_request,
    ) -> None:
        self.route = route
        self.turn_away = turn_away
        self.cluster = cluster
        self.models = models
        self.arrival = arrival  # per request number, seconds
        # What the placement policy needs to place a request (`Needs`): without it, and
        # without an instance of its model with room, a route surely fails.
        self.needs = needs

    @abstractmethod
    def arrive(self, i: int, model: str) -> None:
        """Request `i` arrived: place it now or keep it waiting."""

    @abstractmethod
    def requeue(self, i: int, model: str) -> None:
        """Request `i` was preempted: it waits again (a `drain` follows), or is turned
        away."""

    @abstractmethod
    def drain(self) -> None:
        """Capacity freed up: place waiting requests while any fits."""

    def room_opened(self, model: str) -> None:  # noqa: B027 (an optional hook)
        """An instance of `model` has room now, where none had: its waiters could join."""

    def cached_changed(self, model: str) -> None:  # noqa: B027 (an optional hook)
        """Some server caches `model` now, where none did, or the reverse (`Needs.GPUS`)."""

    def view(self, i: int) -> ClusterView:
        """The cluster as the policy placing request `i` may see it."""
        return self.cluster

    def audit(self) -> str | None:
        """A broken invariant of the discipline's own books, said in words, or None."""
        return None


_REGISTRY: Registry[QueueDiscipline] = Registry("queue discipline")
register = _REGISTRY.register  # class decorator: available as `--queue name`
get_queue = _REGISTRY.get


def queue_names() -> list[str]:
    return _REGISTRY.names()


def parse_queue(value: object) -> str:
    """`value` if it names a queue discipline: the one parser for the cluster file, the
    command line and `sim.run`; ValueError says why not."""
    if value not in queue_names():
        raise ValueError(f"unknown queue discipline {value!r} (known: {', '.join(queue_names())})")
    return value
