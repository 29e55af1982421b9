"""Making room on a busy server: which running instances leave, and where they go.

The instances to displace are chosen as a 0/1 knapsack, exactly: the set whose GPUs cover
the shortfall at the smallest total cost (a server holds a handful of instances, so all
subsets can be tried). Each displaced instance of a migration then needs a destination,
chosen by locality among the other servers with room for it, counting the GPUs this same
decision already claimed; a set with no destination for some member is skipped for the
next cheapest. The destinations are ranked once per decision and model.
"""

from collections.abc import Callable, Collection, Iterable, Iterator
from itertools import combinations

from policies.base import ClusterView, Decision, Move, Running, Start, least_occupied
from thaw_kernel.tiers import CACHE_TIERS

_FEW_HOLDERS = 32  # holders of a checkpoint sorted outright; more are picked in order
# A way to make room on a server: (its cost, the decision), or None if there is none.
RoomOption = Callable[[int], tuple[float, Start] | None]


def first_round_cost(view: ClusterView, server: int) -> Callable[[Running], float]:
    """What migrating an instance off `server` costs: its first round (`a * tokens + b`)."""

    def cost(r: Running) -> float:
        return view.round_cost(r.model, server, server).round_s(r.tokens)

    return cost


def displaceable(view: ClusterView, server: int, model: str) -> tuple[list[Running], int]:
    """The running instances on `server` that could leave to make room for `model` (those
    of other models), and how many GPUs must be freed; none if it can never host it."""
    if not view.can_host(server, model):
        return [], 0
    need = view.gpus_needed(model) - view.available_gpus(server)
    return [r for r in view.running(server) if r.model != model], need


def covering_sets(
    running: list[Running], need: int, cost: Callable[[Running], float]
) -> list[tuple[Running, ...]]:
    """The sets of `running` that free at least `need` GPUs, cheapest first (then fewest
    GPUs freed)."""
    price = {r.id: cost(r) for r in running}
    sets = [
        chosen
        for k in range(1, len(running) + 1)
        for chosen in combinations(running, k)
        if sum(r.gpus for r in chosen) >= need
    ]
    sets.sort(key=lambda chosen: (sum(price[r.id] for r in chosen), sum(r.gpus for r in chosen)))
    return sets


class Ranked:
    """Servers in a fixed order, produced from `source` only as far as they are read, and
    kept for the next reader: a decision reads the first few of a cluster's servers. The
    source reads the view's live indexes, so a `Ranked` serves one decision only."""

    def __init__(self, source: Iterator[int]) -> None:
        self._source = source
        self._kept: list[int] = []

    def __iter__(self) -> Iterator[int]:
        k = 0
        while k < len(self._kept) or self._produce():
            yield self._kept[k]
            k += 1

    def __bool__(self) -> bool:
        return bool(self._kept) or self._produce()

    def _produce(self) -> bool:
        """Keep the source's next server; False when it has none."""
        server = next(self._source, None)
        if server is None:
            return False
        self._kept.append(server)
        return True


def ranked_destinations(view: ClusterView, model: str) -> Ranked:
    """The servers with room for `model` now, in locality's order: DRAM holders, then SSD
    holders, then the rest, least occupied first within each."""
    return Ranked(_locality_order(view, model))


def _locality_order(view: ClusterView, model: str) -> Iterator[int]:
    dram, ssd = view.holders(model, "dram"), view.holders(model, "ssd")
    yield from _held(view, model, dram, ())
    yield from _held(view, model, ssd, dram)
    yield from (s for s in view.by_occupancy(model) if s not in dram and s not in ssd)


def _held(
    view: ClusterView, model: str, holders: Collection[int], skip: Collection[int]
) -> Iterator[int]:
    """The servers of `holders` but not of `skip` with room for `model`, least occupied
    first: a few sorted, many picked out of the cluster's order as it is read."""
    if len(holders) <= _FEW_HOLDERS:
        ready = [s for s in holders if s not in skip and view.can_start(s, model)]
        return iter(sorted(ready, key=lambda s: (view.gpus_in_use(s), s)))
    return (s for s in view.by_occupancy(model) if s in holders and s not in skip)


def destinations(
    view: ClusterView, leaving: tuple[Running, ...], ranked: Callable[[str], Iterable[int]]
) -> list[int] | None:
    """Where each of `leaving` continues, or None if they cannot all be placed at once.

    A small bin packing, solved exactly by backtracking: the largest instances first,
    each trying its `ranked(model)` servers in order, so the first complete assignment
    found is the one locality prefers.
    """
    order = sorted(range(len(leaving)), key=lambda k: -leaving[k].gpus)
    room: dict[int, int] = {}
    found: list[int] = [0] * len(leaving)

    def assign(depth: int) -> bool:
        if depth == len(order):
            return True
        r = leaving[order[depth]]
        for s in ranked(r.model):
            free = room.setdefault(s, view.available_gpus(s))
            if free >= r.gpus:
                room[s] = free - r.gpus
                found[order[depth]] = s
                if assign(depth + 1):
                    return True
                room[s] = free
        return False

    return found if assign(0) else None


def cheapest_moves(
    view: ClusterView,
    server: int,
    model: str,
    cost: Callable[[Running], float],
    ranks: dict[str, Ranked] | None = None,
) -> tuple[tuple[Running, ...], tuple[Move, ...]] | None:
    """The cheapest set of migrations that makes room for `model` on `server`, or None.
    `ranks`, shared by the calls of one decision (the view does not change within it),
    keeps each model's ranked destinations, so they are ranked once per decision."""
    ranks = {} if ranks is None else ranks
    others: dict[str, Ranked] = {}

    def ranked(m: str) -> Ranked:
        if m not in others:
            if m not in ranks:
                ranks[m] = ranked_destinations(view, m)
            others[m] = Ranked(s for s in ranks[m] if s != server)
        return others[m]

    if view.total_available_gpus() < view.gpus_needed(model):
        return None  # migration moves GPUs in use around; it cannot create free ones
    running, need = displaceable(view, server, model)
    movable = [r for r in running if ranked(r.model)]  # somewhere to go, alone at least
    for leaving in covering_sets(movable, need, cost):
        found = destinations(view, leaving, ranked)
        if found is not None:
            moves = tuple(Move(r.id, d) for r, d in zip(leaving, found, strict=True))
            return leaving, moves
    return None


def start_or_make_room(view: ClusterView, model: str, make_room: RoomOption) -> Decision | None:
    """The walk `migration` and `preemption` share: in the fastest tier holding the
    checkpoint, start on the least occupied holder with room, else take the cheapest way
    to make room on a holder; then the next tier. None if neither tier gives a start."""
    for tier in CACHE_TIERS:
        holders = view.holders(model, tier)
        server = least_occupied((s for s in holders if view.can_start(s, model)), view)
        if server is not None:
            return Start(server)
        options = [(option[0], s, option[1]) for s in holders if (option := make_room(s))]
        if options:
            return min(options, key=lambda o: o[:2])[2]
    return None
