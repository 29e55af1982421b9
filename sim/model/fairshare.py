"""How flows over shared links divide them: max-min fairly, by progressive filling (the
loads on a server's links), or in proportion to their caps (the CPU flows on a host's
cores: `sim.model.loading` says why).

Each flow crosses some shared links and has its own cap (the dedicated links on its path,
here the PCIe lanes of the GPUs it loads into). Under max-min all unfrozen flows rise
together; a flow freezes when it reaches its cap or when a link it crosses saturates.
This is the fluid model network simulators use: the result depends only on the set of
flows, not on order.
"""

from collections.abc import Hashable, Mapping, Sequence


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


def proportional_rates(
    flows: Sequence[tuple[Sequence[Hashable], float]], capacity: Mapping[Hashable, float]
) -> list[float]:
    """Each flow's cap, scaled down on an over-asked link by its capacity over the caps
    asked of it (the smallest such factor where a flow crosses several): a flow asking
    twice as much gets twice as much, unlike max-min, which raises all alike."""
    asked: dict[Hashable, float] = {}
    for links, cap in flows:
        for link in links:
            asked[link] = asked.get(link, 0.0) + cap
    scale = {link: min(1.0, capacity[link] / total) for link, total in asked.items() if total}
    return [cap * min([1.0, *(scale.get(link, 1.0) for link in links)]) for links, cap in flows]
