"""The keep-alive interface: how long an idle instance keeps its GPUs, which idle instance
gives them up under pressure, and when to start one before a request comes (pre-warm).

The simulator asks the policy whenever an instance goes idle (`idle`), tells it whenever
a request of a model needed an instance that was not busy, waking an idle one or starting
one (`demand`), and asks it which idle instance of a server to stop when a start needs
its GPUs (`victim`). A policy is chosen as `NAME[:params]` (`--keep-alive`, or
`keep_alive` in the cluster TOML); policies register by name, one module each, and
`sim/keep_alive/__init__.py` imports them all.

Any policy takes the option `sleep=SECONDS` among its params (`fixed:60,sleep=600`):
an instance whose keep-alive expires then sleeps (`sim.config.sleep`) for up to SECONDS
before it stops, if its model has a sleep table and its server the room.
"""

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from sim.keep_alive.params import number
from sim.spec import KeepAliveSpec
from thaw_kernel import bounds
from thaw_kernel.registry import Registry

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    import numpy as np

    from sim.model.instance import Instance
    from sim.model.server import Server


@dataclass(frozen=True)
class Idle:
    """What becomes of an instance that just went idle.

    `keep_s`: seconds it stays warm (0: it stops at once); None: until a start needs its
    GPUs. `prewarm_in_s`: start a fresh instance of its model that many seconds from now
    (None: do not), so that the next request finds it warm.
    """

    keep_s: float | None
    prewarm_in_s: float | None = None


class KeepAlive(ABC):
    name: ClassVar[str]
    sleep_s: float = 0.0  # how long an expired instance sleeps before it stops (0: never)

    @classmethod
    @abstractmethod
    def parse(cls, params: str) -> dict[str, float]:
        """The values of `params`, the text after `NAME:` ('' when none, and without the
        `sleep=` option); ValueError says what is wrong."""

    @abstractmethod
    def __init__(self, values: "Mapping[str, float]", keep_alive_s: float) -> None:
        """`values`: what `parse` made of the params; `keep_alive_s`: the cluster's fixed
        keep-alive, for policies that default to it."""

    def start(  # noqa: B027 (an optional hook)
        self, arrival: "np.ndarray", model: "np.ndarray", names: list[str]
    ) -> None:
        """The run begins: every request's arrival time (sorted) and model (an index into
        `names`), for policies that count requests."""

    @abstractmethod
    def idle(self, instance: "Instance", now: float) -> Idle:
        """`instance` went idle at `now` (a pre-warmed one when ready, unused so far:
        `instance.prewarmed`)."""

    def demand(self, model: str, now: float) -> None:  # noqa: B027 (an optional hook)
        """A request of `model` woke an idle instance or started one."""

    def victim(self, server: "Server") -> "Instance":
        """The idle instance of `server` to stop for a start: the longest idle."""
        return next(iter(server.idle))

    def reclaim_order(self, server: "Server") -> "Iterable[Instance]":
        """The idle instances of `server` in the order successive `victim` calls would
        give them, changing nothing (a wake prices its swap before it makes it)."""
        return server.idle


_REGISTRY: Registry[KeepAlive] = Registry("keep-alive policy")
register = _REGISTRY.register  # class decorator: available as `--keep-alive name[:params]`


def keep_alive_names() -> list[str]:
    return _REGISTRY.names()


def parse_keep_alive(text: object) -> KeepAliveSpec:
    """The policy `text` names (`NAME[:params]`), its parameters parsed and checked: the
    one parser for the cluster file, the command line and `sim.run`; ValueError says why
    not."""
    if isinstance(text, KeepAliveSpec):
        return text
    if not isinstance(text, str):
        raise ValueError(f"expected a string NAME[:params], got {text!r}")
    name, _, params = text.partition(":")
    try:
        cls = _REGISTRY.get(name)
    except KeyError as err:
        raise ValueError(err.args[0]) from None
    items = params.split(",") if params else []
    sleeps = [item.removeprefix("sleep=") for item in items if item.startswith("sleep=")]
    values = cls.parse(",".join(i for i in items if not i.startswith("sleep=")))
    if len(sleeps) > 1:
        raise ValueError("sleep: given twice")
    sleep_s = number(sleeps[0], "sleep", 0.0, bounds.SECONDS) if sleeps else 0.0
    return KeepAliveSpec(text, name, tuple(values.items()), sleep_s)


def make_keep_alive(spec: KeepAliveSpec, keep_alive_s: float) -> KeepAlive:
    """A fresh policy as `spec` chose it, on a cluster whose fixed keep-alive is
    `keep_alive_s` (a policy keeps state over a run, so each run makes its own)."""
    policy = _REGISTRY.get(spec.name)(dict(spec.values), keep_alive_s)
    policy.sleep_s = spec.sleep_s
    return policy
