"""Max-min fair rates for flows over shared links, by progressive filling.

Each flow crosses some shared links and has its own cap (the dedicated links on its path,
here the PCIe lanes of the GPUs it loads into). All unfrozen flows rise together; a flow
freezes when it reaches its cap or when a link it crosses saturates. This is the fluid
model network simulators use: the result depends only on the set of flows, not on order.
"""

from collections.abc import Hashable, Mapping, Sequence

_FILLED = 1e-9  # a link left less than this part of its capacity is full


def max_min_rates(
    flows: Sequence[tuple[Sequence[Hashable], float]], capacity: Mapping[Hashable, float]
) -> list[float]:
    """Rate of each flow, given (links crossed, cap) per flow and each link's capacity."""
    rates = [0.0] * len(flows)
    residual = dict(capacity)
    active = set(range(len(flows)))
    while active:
        users: dict[Hashable, int] = {}
        for f in active:
            for link in flows[f][0]:
                users[link] = users.get(link, 0) + 1
        share = {link: residual[link] / n for link, n in users.items()}
        level = min([flows[f][1] for f in active] + list(share.values()))
        saturated = {link for link, s in share.items() if s <= level}
        frozen = [
            f
            for f in active
            if flows[f][1] <= level or any(link in saturated for link in flows[f][0])
        ]
        for f in frozen:
            rates[f] = level
            for link in flows[f][0]:
                residual[link] = max(0.0, residual[link] - level)
            active.discard(f)
    return rates


def first_then_rest(
    flows: Sequence[tuple[Sequence[Hashable], float]],
    capacity: Mapping[Hashable, float],
    first: Hashable,
) -> list[float]:
    """As `max_min_rates`, in two turns: the flows crossing the link `first` take their
    max-min fair rates over the whole capacity, then the others share what they leave."""
    turn = [first in links for links, _ in flows]
    if not any(turn):
        return max_min_rates(flows, capacity)
    rates = [0.0] * len(flows)
    firsts = [k for k, served in enumerate(turn) if served]
    rest = [k for k, served in enumerate(turn) if not served]
    residual = dict(capacity)
    for k, rate in zip(firsts, max_min_rates([flows[k] for k in firsts], capacity), strict=True):
        rates[k] = rate
        for link in flows[k][0]:
            residual[link] -= rate
    for link, left in residual.items():  # a link the first turn filled, rounding aside
        residual[link] = 0.0 if left < capacity[link] * _FILLED else left
    for k, rate in zip(rest, max_min_rates([flows[k] for k in rest], residual), strict=True):
        rates[k] = rate
    return rates
