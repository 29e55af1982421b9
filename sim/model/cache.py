"""A server's DRAM or SSD checkpoint cache: whole checkpoints, least recently used first out.

Capacity is never exceeded, and a checkpoint that a load is reading from or writing into
is pinned: eviction skips it. Bytes may also be `reserve`d outside the cache (a sleeping
engine's weights in DRAM, `sim.model.sleepers`): they count against its capacity. The cluster's
index of "which servers hold model M in this tier" is kept in step through the
`on_change` callback.
"""

from collections import OrderedDict
from collections.abc import Callable


class CheckpointCache:
    def __init__(self, capacity: int, on_change: Callable[[str, bool], None]) -> None:
        self.capacity = capacity
        self.used = 0
        self.reserved = 0  # bytes held outside the cache's entries
        self._entries: OrderedDict[str, int] = OrderedDict()  # LRU first
        self._pins: dict[str, int] = {}
        self._on_change = on_change

    def __contains__(self, model: str) -> bool:
        return model in self._entries

    def models(self) -> list[str]:
        """Cached checkpoints, least recently used first."""
        return list(self._entries)

    def touch(self, model: str) -> None:
        self._entries.move_to_end(model)

    def pin(self, model: str) -> None:
        self._pins[model] = self._pins.get(model, 0) + 1

    def unpin(self, model: str) -> None:
        left = self._pins[model] - 1
        if left:
            self._pins[model] = left
        else:
            del self._pins[model]

    def admit(self, model: str, size: int) -> bool:
        """Hold `model` (most recently used), evicting unpinned LRU entries if needed.

        Returns False, evicting nothing, when even evicting every unpinned entry would not
        make room.
        """
        if model in self._entries:
            self.touch(model)
            return True
        if not self._make_room(size):
            return False
        self._entries[model] = size
        self.used += size
        self._on_change(model, True)
        return True

    def reserve(self, size: int) -> bool:
        """Hold `size` bytes outside the entries, evicting unpinned LRU entries if needed;
        False, evicting nothing, if they cannot fit."""
        if not self._make_room(size):
            return False
        self.reserved += size
        return True

    def release(self, size: int) -> None:
        self.reserved -= size

    def reservable(self, pinning: str = "") -> int:
        """Bytes `reserve` could take now, evicting every unpinned entry, were `pinning`
        pinned too (a wake pricing its reload before the swap that reserves)."""
        pinned = sum(self._entries[m] for m in self._pins if m in self._entries)
        if pinning in self._entries and pinning not in self._pins:
            pinned += self._entries[pinning]
        return self.capacity - pinned - self.reserved

    def _make_room(self, size: int) -> bool:
        if size > self.reservable():
            return False
        for victim in [m for m in self._entries if m not in self._pins]:
            if self.used + self.reserved + size <= self.capacity:
                break
            self.used -= self._entries.pop(victim)
            self._on_change(victim, False)
        return True
