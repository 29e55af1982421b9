"""Making room on a busy server: which running instances leave, and where they go.

The instances to displace are chosen as a 0/1 knapsack, exactly: the set whose GPUs cover
the shortfall at the smallest total cost (a server holds a handful of instances, so all
subsets can be tried). Each displaced instance of a migration then needs a destination,
chosen by locality among the other servers with room for it, counting the GPUs this same
decision already claimed; a set with no destination for some member is skipped for the
next cheapest.
"""

from collections.abc import Callable, Iterator
from itertools import combinations

from policies.base import ClusterView, Decision, Move, Running, Start, least_loaded, nearest

# A way to make room on a server: (its cost, the decision), or None if there is none.
RoomOption = Callable[[int], tuple[float, Start] | None]


def first_round_cost(view: ClusterView, server: int) -> Callable[[Running], float]:
    """What migrating an instance off `server` costs: its first round (`a * tokens + b`)."""

    def cost(r: Running) -> float:
        return view.round_cost(r.model, server, server).round_s(r.tokens)

    return cost


def shortfall(view: ClusterView, server: int, model: str) -> int:
    """GPUs that must be freed on `server` before `model` can start there."""
    return max(0, view.gpus_needed(model) - view.available_gpus(server))


def covering_sets(
    view: ClusterView, server: int, model: str, cost: Callable[[Running], float]
) -> Iterator[tuple[Running, ...]]:
    """Sets of running instances (of other models) that free enough GPUs, cheapest first."""
    if not view.can_host(server, model):
        return
    need = shortfall(view, server, model)
    running = [r for r in view.running(server) if r.model != model]
    sets = [
        chosen
        for k in range(1, len(running) + 1)
        for chosen in combinations(running, k)
        if sum(r.gpus for r in chosen) >= need
    ]
    sets.sort(key=lambda chosen: (sum(cost(r) for r in chosen), sum(r.gpus for r in chosen)))
    yield from sets


def destinations(view: ClusterView, server: int, leaving: tuple[Running, ...]) -> list[int] | None:
    """Where each of `leaving` continues (by locality, never on `server`); None if some
    instance has nowhere to go."""
    claimed: dict[int, int] = {}
    found = []
    for r in leaving:

        def fits(s: int, r: Running = r) -> bool:
            free = view.available_gpus(s) - claimed.get(s, 0)
            return s != server and view.can_start(s, r.model) and free >= r.gpus

        destination = nearest(view, r.model, fits)
        if destination is None:
            return None
        claimed[destination] = claimed.get(destination, 0) + r.gpus
        found.append(destination)
    return found


def cheapest_moves(
    view: ClusterView, server: int, model: str, cost: Callable[[Running], float]
) -> tuple[tuple[Running, ...], tuple[Move, ...]] | None:
    """The cheapest set of migrations that makes room for `model` on `server`, or None."""
    for leaving in covering_sets(view, server, model, cost):
        found = destinations(view, server, leaving)
        if found is not None:
            moves = tuple(Move(r.id, d) for r, d in zip(leaving, found, strict=True))
            return leaving, moves
    return None


def start_or_make_room(view: ClusterView, model: str, make_room: RoomOption) -> Decision | None:
    """The walk `migration` and `preemption` share: in the fastest tier holding the
    checkpoint, start on the least loaded holder with room, else take the cheapest way
    to make room on a holder; then the next tier. None if neither tier gives a start."""
    for tier in ("dram", "ssd"):
        holders = view.holders(model, tier)
        server = least_loaded((s for s in holders if view.can_start(s, model)), view)
        if server is not None:
            return Start(server)
        options = [(option[0], s, option[1]) for s in holders if (option := make_room(s))]
        if options:
            return min(options, key=lambda o: o[:2])[2]
    return None
