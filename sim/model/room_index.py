"""Which instances of one model can take another request, indexed for O(batch) joins.

A request joins the least occupied warm instance of its model that has room (the oldest
among equals), else the oldest starting one with room. Scanning every instance of the
model per arrival costs as much as the cluster is large; instead each instance files
itself, whenever its load or state changes, under a bucket: its load if warm, "starting"
otherwise, nowhere when it has no room. Each bucket keeps instance ids sorted, and ids
grow with creation, so the oldest is the first.
"""

from bisect import bisect_left, insort
from collections.abc import Callable

from sim.model.instance import STARTING_ROOM, Instance

_STARTING = STARTING_ROOM  # the bucket of starting and loading instances


class RoomIndex:
    def __init__(self, max_batch: int, opened: Callable[[], None]) -> None:
        self._warm: list[list[int]] = [[] for _ in range(max_batch)]  # by load
        self._starting: list[int] = []
        self._instances: dict[int, Instance] = {}  # those filed, by id
        self._opened = opened  # called when the model had no instance with room, and has

    def update(self, instance: Instance) -> None:
        """File `instance` where its current load and state put it; if the model had no
        instance with room before and has one now, say so (its waiters may join it).
        Instances call it themselves, twice a request, hence no call between."""
        key = instance.room_key()
        # Where it was filed last, kept on the instance: a dict of them would cost two
        # more lookups an update, and this runs twice a request.
        old = instance.room_filed
        if key == old:
            return
        instance.room_filed = key
        number = instance.id
        if old is not None:  # buckets read in place, not by a method
            bucket = self._starting if old == _STARTING else self._warm[old]
            del bucket[bisect_left(bucket, number)]
        if key is None:
            del self._instances[number]
            return
        insort(self._starting if key == _STARTING else self._warm[key], number)
        if old is not None:
            return
        self._instances[number] = instance
        if len(self._instances) == 1:
            self._opened()

    def best(self) -> Instance | None:
        """The least occupied warm instance with room (oldest first), else the oldest
        starting one with room; None if no instance has room."""
        for bucket in self._warm:
            if bucket:
                return self._instances[bucket[0]]
        return self._instances[self._starting[0]] if self._starting else None
