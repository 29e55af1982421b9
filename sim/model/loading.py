"""A checkpoint load onto a new instance's GPUs, from the fastest tier that holds it.

The source entry is pinned from the decision until the load ends, so eviction cannot pull
it away mid-read. The load is pipelined through every link between its tier and the
GPUs: DRAM -> GPU over the instance's own PCIe lanes (never shared: a GPU belongs to one
instance), SSD -> DRAM -> GPU adding the server's SSD, remote -> DRAM -> GPU adding the
server's network link. When it ends, the checkpoint is installed in the faster caches it
passed through: DRAM for an SSD load, SSD and DRAM for a remote one (space permitting).
"""

from collections.abc import Callable

from sim.model.server import Server
from sim.spec import ModelSpec
from thaw_kernel.tiers import Tier

# The shared links a load from each tier crosses (the PCIe lanes are the load's own cap).
LINKS = {Tier.DRAM: (), Tier.SSD: ("ssd",), Tier.REMOTE: ("network",)}


def fastest_tier(server: Server, model: str) -> Tier:
    if model in server.dram:
        return Tier.DRAM
    if model in server.ssd:
        return Tier.SSD
    return Tier.REMOTE


class CheckpointLoad:
    def __init__(self, server: Server, model: ModelSpec, gpus: int) -> None:
        self.server = server
        self.model = model
        self.tier = fastest_tier(server, model.name)
        self.cap = gpus * server.group.pcie
        # Its (time, fraction loaded) points, recorded when a prefill pipelines behind it.
        self.progress: list[tuple[float, float]] | None = None
        if self.tier != Tier.REMOTE:
            source = server.cache(self.tier)
            source.touch(model.name)
            source.pin(model.name)
            server.reading[self.tier, model.name] += 1

    @property
    def links(self) -> tuple[str, ...]:
        return LINKS[self.tier]

    def start_in(self, delay: float, on_done: Callable[[], None]) -> None:
        """Begin the load after `delay` (the instance start-up); `on_done` when it ends."""

        def finish() -> None:
            self._install()
            on_done()

        self.server.links.start_in(
            delay, self.model.weights, self.links, self.cap, finish, self.progress
        )

    def _install(self) -> None:
        name, size = self.model.name, self.model.weights
        if self.tier != Tier.REMOTE:
            self.server.cache(self.tier).unpin(name)
            self.server.reading[self.tier, name] -= 1
        if self.tier == Tier.REMOTE:
            self.server.ssd.admit(name, size)
        self.server.dram.admit(name, size)
