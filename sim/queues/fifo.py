"""`fifo`: per-model queues, retried greedily, the model with the oldest waiter first.

A request waits in its model's queue, behind any request of its model already waiting
(those would be placed the same way first). Whenever capacity frees up, the models are
visited in the order of their oldest waiter, and each places requests while they fit; a
model that cannot place its oldest moves on to the next. Greedy: a model needing a whole
server can wait long while smaller models take GPUs as they free (`backfill` reserves).

A retry skips the visits that would surely fail, so that it costs what it places, not
how many models wait (a hub-scale catalog on scarce GPUs keeps thousands waiting). A
route succeeds only by joining an instance of its model with room, or by a start or a
wake, which need what the policy says it needs (`Needs`; a wake needs a server that can
start the model). The waiting models are filed by start class (their GPUs, the server
groups that can host them, and whether a server caches them: a need is met for all of a
class or for none), each class in a line in the visiting order; a model that becomes
cached or uncached moves to its new line at once, keeping its place. A retry merges,
step by step, the lines whose need is met then with the models that gained room since
their last visit (`room_opened`). A skipped visit would have changed nothing (a Wait
draws no random number), so every placement is the one that visiting every model makes.
"""

import bisect
from collections import deque
from collections.abc import Iterator
from itertools import chain
from operator import itemgetter

from policies.base import Needs
from sim.queues.base import QueueDiscipline, register

Key = tuple[float, ...]  # a model's place in the visiting order, from its oldest waiter
StartClass = tuple[int, tuple[int, ...], bool]  # GPUs, host groups, cached: see `Needs`

_KEY = itemgetter(0)


@register("fifo")
class Fifo(QueueDiscipline):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.waiting: dict[str, deque[int]] = {}  # per model, arrival order
        self._draining = False
        # Per start class, its waiting models as (key, model), sorted; where each is.
        self._lines: dict[StartClass, list[tuple[Key, str]]] = {}
        self._filed: dict[str, tuple[Key, StartClass]] = {}
        self._roomy: set[str] = set()  # waiting models that may have an instance with room
        self._stale: set[str] | None = None  # while a retry runs: models to file after it

    def arrive(self, i: int, model: str) -> None:
        if model in self.waiting:
            self.waiting[model].append(i)
        elif not self.route(i, model):
            self.waiting[model] = deque([i])
            self._touch(model)

    def requeue(self, i: int, model: str) -> None:
        bisect.insort(self.waiting.setdefault(model, deque()), i)  # numbers: arrival order
        self._touch(model)
        self._roomy.add(model)  # another instance of its model may have room

    def room_opened(self, model: str) -> None:
        if model in self.waiting:
            self._roomy.add(model)

    def cached_changed(self, model: str) -> None:
        """Move `model` to its new class's line, in its place even while a retry runs
        (every model of a line must meet a need alike)."""
        filed = self._filed.get(model)
        if filed is not None and filed[1] != self._start_class(model):
            self._unfile(model)
            self._put(model, filed[0])

    def _key(self, model: str) -> Key:
        """Where `model` stands in the visiting order: by its oldest waiter."""
        return (self.waiting[model][0],)

    def drain(self) -> None:
        if self._draining or not self.waiting:
            return
        self._draining = True
        try:
            self._offer()
        finally:
            self._draining = False

    def _offer(self) -> None:
        """Offer free capacity to the waiters (`drain`, without re-entering it)."""
        self._serve()

    def _serve(self, skip: str | None = None) -> None:
        """Visit every waiting model but `skip` in order, each placing its waiters oldest
        first until one must wait; skip those that surely must. The order is the one at
        the start: models whose keys change meanwhile are filed again after."""
        self._stale = set()
        try:
            for model in self._visits():
                if model != skip:
                    self._visit(model)
        finally:
            stale, self._stale = self._stale, None
            for model in stale:
                self._file(model)

    def _visits(self) -> Iterator[str]:
        """The models a retry visits, in order: each next one chosen after the last visit,
        or, with no promise from the policy, every waiting model."""
        if self.needs is Needs.NOTHING:
            yield from [model for _, model in sorted(chain(*self._lines.values()))]
            return
        after: Key | None = None
        while (model := self._next(after)) is not None:
            after = self._filed[model][0]
            yield model

    def _visit(self, model: str) -> None:
        queue = self.waiting[model]
        placed = False
        while queue and self.route(queue[0], model):
            queue.popleft()
            placed = True
        if not queue:
            del self.waiting[model]
        self._roomy.discard(model)  # its route failed (so it has no room), or it waits no more
        if placed:
            self._touch(model)

    def _next(self, after: Key | None) -> str | None:
        """The first model filed after `after` whose route may succeed now: the policy's
        need is met for its class, or it may have room."""
        best: tuple[Key, str] | None = None
        for line in self._lines.values():
            j = 0 if after is None else bisect.bisect_right(line, after, key=_KEY)
            if j < len(line) and (best is None or line[j] < best) and self._met(line[j][1]):
                best = line[j]
        for model in self._roomy:
            filed = self._filed.get(model)  # None: it began waiting during this retry
            if filed is None or (after is not None and filed[0] <= after):
                continue
            key = filed[0]
            if best is None or (key, model) < best:
                best = (key, model)
        return None if best is None else best[1]

    def _met(self, model: str) -> bool:
        """Whether the policy's need is met for `model`'s oldest waiter (and so for its
        whole line; `backfill`'s holder sees more than the others, but its model is the
        one it skips)."""
        return self.needs.met(self.view(self.waiting[model][0]), model)

    def _head(self) -> str:
        """The model first in the visiting order (some model waits; no retry runs)."""
        return min(line[0] for line in self._lines.values())[1]

    def _touch(self, model: str) -> None:
        """`model`'s queue changed at its head, or began or ended: file it again, after
        the retry if one runs."""
        if self._stale is None:
            self._file(model)
        else:
            self._stale.add(model)

    def _file(self, model: str) -> None:
        """Put `model` where its oldest waiter places it, or drop it if none waits."""
        self._unfile(model)
        if model in self.waiting:
            self._put(model, self._key(model))
        else:
            self._roomy.discard(model)

    def _unfile(self, model: str) -> None:
        old = self._filed.pop(model, None)
        if old is not None:
            line = self._lines[old[1]]
            del line[bisect.bisect_left(line, (old[0], model))]
            if not line:
                del self._lines[old[1]]

    def _put(self, model: str, key: Key) -> None:
        """File `model` at `key` in the line of its class now."""
        start_class = self._start_class(model)
        bisect.insort(self._lines.setdefault(start_class, []), (key, model))
        self._filed[model] = key, start_class

    def _start_class(self, model: str) -> StartClass:
        return (
            self.models[model].gpus,
            self.cluster.host_groups(model),
            self.needs.reads_cache and self.cluster.cached(model),
        )

    def audit(self) -> str | None:
        if self._filed.keys() != self.waiting.keys():
            return f"models filed {sorted(self._filed)} but waiting {sorted(self.waiting)}"
        for model, filed in self._filed.items():
            now = self._key(model), self._start_class(model)
            if filed != now:
                return f"model {model} filed as {filed}, its oldest waiter and class are {now}"
        if sum(map(len, self._lines.values())) != len(self._filed):
            return "a model is filed twice"
        if not self._roomy <= self.waiting.keys():
            return f"models {sorted(self._roomy - self.waiting.keys())} may have room but wait not"
        return None
