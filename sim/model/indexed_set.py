"""A set of ints with O(1) add, remove and access by position.

The cluster's indexes (servers holding model M in DRAM, servers with k available GPUs)
need membership updates on every load and release, and uniform sampling for the
`random` policy; a list plus a position map gives both without scanning.
"""

from collections.abc import Iterator


class IndexedSet:
    __slots__ = ("_items", "_position")

    def __init__(self) -> None:
        self._items: list[int] = []
        self._position: dict[int, int] = {}

    def add(self, item: int) -> None:
        if item not in self._position:
            self._position[item] = len(self._items)
            self._items.append(item)

    def discard(self, item: int) -> None:
        index = self._position.pop(item, None)
        if index is None:
            return
        last = self._items.pop()
        if last != item:
            self._items[index] = last
            self._position[last] = index

    def move(self, item: int, to: "IndexedSet") -> None:
        """Take `item` from here to `to`, where it is not: `discard` and `add` in one call
        (a server changes buckets of available GPUs twice for every request that finds
        its instance idle)."""
        index = self._position.pop(item)
        last = self._items.pop()
        if last != item:
            self._items[index] = last
            self._position[last] = index
        to._position[item] = len(to._items)
        to._items.append(item)

    def __getitem__(self, index: int) -> int:
        return self._items[index]

    def __contains__(self, item: int) -> bool:
        return item in self._position

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[int]:
        return iter(self._items)
