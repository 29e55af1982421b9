"""A checkpoint load onto a new instance's GPUs, from the fastest tier that holds it.

The source entry is pinned from the decision until the load ends, so eviction cannot pull
it away mid-read. The load is pipelined through every link between its tier and the
GPUs: DRAM -> GPU over the instance's own PCIe lanes (never shared: a GPU belongs to one
instance), SSD -> DRAM -> GPU adding the server's SSD (and the host's disk, when a host's
servers share one: `Server.paths`), remote -> DRAM -> GPU adding the server's network
link. When it ends, the checkpoint is installed in the faster caches it passed through:
DRAM for an SSD load, SSD and DRAM for a remote one (space permitting).

With `remote_download` a remote start is two phases, as in ServerlessLLM: the checkpoint
is downloaded over the network link into the server's SSD (its writes crossing the host's
disk, if shared), admitted there (least recently used out; if it cannot be, the load still
reads the downloaded copy, which is then dropped) and pinned, then loaded from the SSD
exactly as an SSD start is. The instance's tier stays remote.
"""

import math
from collections.abc import Callable

from sim.model.server import Server
from sim.spec import ModelSpec
from thaw_kernel.tiers import Tier

Phase = tuple[float, tuple[str, ...], float]  # (bytes, links crossed, own cap)


def fastest_tier(server: Server, model: str) -> Tier:
    if model in server.dram:
        return Tier.DRAM
    if model in server.ssd:
        return Tier.SSD
    return Tier.REMOTE


def load_phases(server: Server, model: ModelSpec, tier: Tier) -> tuple[Phase, ...]:
    """The flows a load of `model` from `tier` onto `server` runs, one after the other:
    what the model runs (`CheckpointLoad`) and the estimates price (`Cluster.tier_load_s`)."""
    cap = model.gpus * server.group.pcie
    if tier == Tier.REMOTE and server.download:
        download = (float(model.weights), server.download_path, math.inf)
        return download, (float(model.weights), server.paths[Tier.SSD], cap)
    return ((float(model.weights), server.paths[tier], cap),)


class CheckpointLoad:
    def __init__(self, server: Server, model: ModelSpec, gpus: int) -> None:
        self.server = server
        self.model = model
        self.tier = fastest_tier(server, model.name)
        self.cap = gpus * server.group.pcie
        # Its (time, fraction loaded) points, recorded when a prefill pipelines behind it.
        self.progress: list[tuple[float, float]] | None = None
        # When it began, its download ended (if it had one) and it ended (the instance log).
        self.began_at = self.downloaded_at = self.ended_at = math.nan
        self._staged = False  # its downloaded copy was admitted to the SSD (and pinned)
        if self.tier != Tier.REMOTE:
            source = server.cache(self.tier)
            source.touch(model.name)
            source.pin(model.name)
            server.reading[self.tier, model.name] += 1

    def durations(self) -> tuple[float, float]:
        """Seconds from its start to its end, and of them the download's (NaN if none)."""
        return self.ended_at - self.began_at, self.downloaded_at - self.began_at

    @property
    def links(self) -> tuple[str, ...]:
        return self.server.paths[self.tier]

    def start_in(self, delay: float, on_done: Callable[[], None]) -> None:
        """Begin the load after `delay` (the instance start-up); `on_done` when it ends."""
        links = self.server.links
        self.began_at = links.now + delay

        def finish() -> None:
            self.ended_at = links.now
            self._install()
            on_done()

        if self.tier == Tier.REMOTE and self.server.download:
            download, load = load_phases(self.server, self.model, self.tier)

            def downloaded() -> None:
                self.downloaded_at = links.now
                self._stage()
                links.start(*load, finish, self.progress)

            links.start_in(delay, *download, downloaded, then=(load,))
            return
        links.start_in(delay, self.model.weights, self.links, self.cap, finish, self.progress)

    def _stage(self) -> None:
        """The download is on the SSD: admit it there if it fits, pinned while it is read."""
        name = self.model.name
        if self.server.ssd.admit(name, self.model.weights):
            self._staged = True
            self.server.ssd.pin(name)
            self.server.reading[Tier.SSD, name] += 1

    def _install(self) -> None:
        name, size = self.model.name, self.model.weights
        if self.tier != Tier.REMOTE:
            self.server.cache(self.tier).unpin(name)
            self.server.reading[self.tier, name] -= 1
        elif self._staged:
            self.server.ssd.unpin(name)
            self.server.reading[Tier.SSD, name] -= 1
        elif not self.server.download:  # streamed: installed in passing, space permitting
            self.server.ssd.admit(name, size)
        self.server.dram.admit(name, size)
