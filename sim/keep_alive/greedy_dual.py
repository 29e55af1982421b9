"""`greedy-dual`: keep-alive as caching, after FaasCache (Fuerst and Sharma, "FaasCache:
Keeping Serverless Computing Alive with Greedy-Dual Caching", ASPLOS '21).

Idle instances stay warm with no time limit; only GPU pressure stops them: when a start
needs the GPUs of a server's idle instances, the one with the lowest priority goes first,
Greedy-Dual-Size-Frequency's

    priority = clock + frequency x cost / size

set when the instance last went idle (its last use). Here frequency is the number of its
model's requests so far, cost its own cold start (start-up plus load, seconds), size its
GPUs; each server keeps its own clock, which becomes the priority of every instance it
evicts, so instances idle since long ago age out against fresh ones. Ties go to the
longest idle. When the run has nothing left to do, the instances still idle stop.
"""

import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from sim.keep_alive.base import Idle, KeepAlive, register

if TYPE_CHECKING:
    from sim.model.instance import Instance
    from sim.model.server import Server

_KEEP = Idle(None)


@register("greedy-dual")
class GreedyDual(KeepAlive):
    @classmethod
    def parse(cls, params: str) -> dict[str, float]:
        if params:
            raise ValueError(f"greedy-dual takes no parameters, got {params!r}")
        return {}

    def __init__(self, values: Mapping[str, float], keep_alive_s: float) -> None:
        self._arrivals: Mapping[str, np.ndarray] = {}
        self._clock: dict[int, float] = {}  # per server
        self.priority: weakref.WeakKeyDictionary[Instance, float] = weakref.WeakKeyDictionary()

    def start(self, arrival: np.ndarray, model: np.ndarray, names: list[str]) -> None:
        self._arrivals = {name: arrival[model == code] for code, name in enumerate(names)}

    def idle(self, instance: "Instance", now: float) -> Idle:
        arrivals = self._arrivals.get(instance.model.name)
        frequency = 0 if arrivals is None else int(np.searchsorted(arrivals, now, "right"))
        cost = instance.ready_at - instance.allocated_at
        clock = self._clock.get(instance.server, 0.0)
        self.priority[instance] = clock + frequency * cost / instance.model.gpus
        return _KEEP

    def victim(self, server: "Server") -> "Instance":
        chosen = min(server.idle, key=self.priority.__getitem__)  # the first of equals
        self._clock[server.id] = self.priority.pop(chosen)
        return chosen

    def reclaim_order(self, server: "Server") -> "list[Instance]":
        return sorted(server.idle, key=self.priority.__getitem__)  # stable: as `victim`
