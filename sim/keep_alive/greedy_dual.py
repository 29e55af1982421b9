"""`greedy-dual`: keep-alive as caching, after FaasCache (Fuerst and Sharma, "FaasCache:
Keeping Serverless Computing Alive with Greedy-Dual Caching", ASPLOS '21).

Idle instances stay warm with no time limit; only GPU pressure stops them: when a start
needs the GPUs of a server's idle instances, the one with the lowest priority goes first,
Greedy-Dual-Size-Frequency's

    priority = clock + frequency x cost / size

set when the instance last went idle (its last use). As in FaasCache, frequency is the
hits of the model's instances still in the server's pool: the requests each live
instance of the model on that server has taken (those that have gone idle at least
once, and this one), so an evicted instance's hits are gone with it and a once-popular
model ages out. Cost is the instance's own cold start (start-up plus load, seconds, as
thaw measures it with contention; FaasCache's is the function's cold-minus-warm time),
size its GPUs (FaasCache's is the container's memory: here GPUs are what is cached).
Each server keeps its own clock, which becomes the priority of every instance it evicts,
so instances idle since long ago age out against fresh ones. Ties go to the longest
idle. When the run has nothing left to do, the instances still idle stop.
"""

import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING

from sim.keep_alive.base import Idle, KeepAlive, register
from sim.model.instance import SLEEPING, STOPPED

if TYPE_CHECKING:
    from sim.model.instance import Instance
    from sim.model.server import Server

_KEEP = Idle(None)
_GONE = (STOPPED, SLEEPING)  # out of the pool: their hits no longer count


@register("greedy-dual")
class GreedyDual(KeepAlive):
    @classmethod
    def parse(cls, params: str) -> dict[str, float]:
        if params:
            raise ValueError(f"greedy-dual takes no parameters, got {params!r}")
        return {}

    def __init__(self, values: Mapping[str, float], keep_alive_s: float) -> None:
        self._clock: dict[int, float] = {}  # per server
        self.priority: weakref.WeakKeyDictionary[Instance, float] = weakref.WeakKeyDictionary()
        # Per (server, model), the instances seen going idle: the pool whose hits count.
        self._pool: dict[tuple[int, str], weakref.WeakSet[Instance]] = {}

    def idle(self, instance: "Instance", now: float) -> Idle:
        pool = self._pool.setdefault((instance.server, instance.model.name), weakref.WeakSet())
        pool.add(instance)
        frequency = sum(i.admitted for i in pool if i.state not in _GONE)
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
