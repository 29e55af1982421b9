"""One GPU server: its GPUs, DRAM and SSD checkpoint caches, shared load links and the
host cores its instances' CPU-bound start-up stages share (its own host's, or one that
several servers share: `servers_per_host`).

A server's load links are its own fluid domain, unless its group has a `host_disk`: then
the servers of a host share one domain holding each server's `ssd:{id}` and
`network:{id}` and the host's `disk`, so that an SSD load (or a download's write) crosses
both its server's link and the disk, and max-min fairness spans the host.
"""

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from functools import partial

from sim.model.cache import CheckpointCache
from sim.model.clock import Clock
from sim.model.fairshare import proportional_rates
from sim.model.instance import Instance
from sim.model.transfers import ServerLinks
from sim.spec import ServerGroup
from thaw_kernel.tiers import Tier

# The links a load from each tier crosses on a server with a links domain of its own (the
# PCIe lanes are the load's own cap), and those a download from the remote tier crosses.
LINKS = {Tier.DRAM: (), Tier.SSD: ("ssd",), Tier.REMOTE: ("network",)}
DOWNLOAD = ("network",)
HOST_DISK = "disk"  # the host's one disk, in a host's shared domain
CORES = ("cores",)  # what CPU work crosses: its host's cores (`Server.cores`)
# What a start-up's CPU stage crosses: the cores, and the second name marks it as the
# compute-bound flow that any company slows (`startup_company_slowdown`), where a load's
# CPU work, paced by its bytes, has the slack to absorb it.
STARTUP_CPU = ("cores", "startup")


def _nothing() -> None:
    """A deletion's end: nothing waits on it."""


def host_cores(clock: Clock, cores: float, company_slowdown: float = 0.0) -> ServerLinks:
    """A host's cores as a fluid domain, shared in proportion to what each flow asks
    (sim.model.loading says why); a start-up's CPU stage in company asks its core over
    1 + `company_slowdown`."""
    capacity = core_capacity(cores)
    if not company_slowdown:
        return ServerLinks(clock, capacity, share=proportional_rates)
    return ServerLinks(clock, capacity, share=partial(rates_in_company, company_slowdown))


def core_capacity(cores: float) -> dict[str, float]:
    """A host's cores as link capacities: the start-ups' marker never limits them."""
    return {CORES[0]: cores, STARTUP_CPU[1]: math.inf}


def rates_in_company(
    slowdown: float, flows: Sequence[tuple[Sequence[str], float]], capacity: Mapping[str, float]
) -> list[float]:
    """`proportional_rates`, each start-up asking its cap over 1 + `slowdown` while any
    other flow shares the cores: on a small or virtual host a start-up's bursts of
    threads collide with its company's before the cores run out (docs/model.md, "A
    start-up in company"). Among start-ups alone on over-asked cores this changes
    nothing: each still gets the cores over their number."""
    if len(flows) > 1:
        flows = [(links, company_cap(links, cap, slowdown)) for links, cap in flows]
    return proportional_rates(flows, capacity)


def company_cap(links: Sequence[str], cap: float, slowdown: float) -> float:
    """What a flow over `links` capped at `cap` asks of the cores in company."""
    return cap / (1 + slowdown) if STARTUP_CPU[1] in links else cap


class Server:
    # Slots: a cluster holds up to thousands of servers, read on every idle and busy turn.
    __slots__ = (
        "copying",
        "cores",
        "download",
        "download_path",
        "dram",
        "free_gpus",
        "gpus",
        "group",
        "group_index",
        "id",
        "idle",
        "idle_gpus",
        "instances",
        "links",
        "paths",
        "reading",
        "sleep_memory",
        "sleeping",
        "ssd",
    )

    def __init__(
        self,
        server_id: int,
        group_index: int,
        group: ServerGroup,
        clock: Clock,
        on_cache_change: Callable[[str, str, int, bool], None],
        cores: ServerLinks,
        host: ServerLinks | None = None,
        download: bool = False,
    ) -> None:
        self.id = server_id
        self.group_index = group_index
        self.group = group
        self.gpus = group.gpus
        # Whether a start from the remote tier downloads to SSD, then loads from it.
        self.download = download
        if host is None:
            self.links = ServerLinks(clock, {"network": group.network, "ssd": group.ssd_read})
            self.paths: dict[str, tuple[str, ...]] = LINKS
            self.download_path = DOWNLOAD
        else:  # the host's domain, with its disk (`host_disk`) shared by its servers
            ssd, network = f"ssd:{server_id}", f"network:{server_id}"
            host.capacity[ssd] = group.ssd_read
            host.capacity[network] = group.network
            self.links = host
            self.paths = {Tier.DRAM: (), Tier.SSD: (ssd, HOST_DISK), Tier.REMOTE: (network,)}
            self.download_path = (network, HOST_DISK)  # its writes take disk time
        # CPU-bound start-up stages as flows of CPU-seconds, at most one core each: the
        # host's cores (`servers_per_host` servers share them).
        self.cores = cores
        self.dram = CheckpointCache(
            group.dram, lambda model, held: on_cache_change("dram", model, server_id, held)
        )
        self.ssd = CheckpointCache(
            group.ssd, lambda model, held: on_cache_change("ssd", model, server_id, held)
        )
        # Loads in flight per (tier, model) reading from this server's caches: each pins
        # its source (the invariant checker holds the caches' pins to these counts).
        self.reading: Counter[tuple[str, str]] = Counter()
        self.free_gpus = group.gpus
        self.instances: dict[Instance, None] = {}  # every live instance, oldest first
        # Warm instances holding no request, oldest idle first (reclaimed in that order),
        # each with the time it went idle.
        self.idle: dict[Instance, float] = {}
        self.idle_gpus = 0
        # Sleeping engines (`sim.model.sleepers`), hold no GPU, each with the time it fell
        # asleep, and the GPU memory they keep, summed over their GPUs.
        self.sleeping: dict[Instance, float] = {}
        self.sleep_memory = 0
        # Level-1 engines woken whose weights are still crossing from DRAM to their GPUs:
        # their DRAM stays reserved until the copy ends.
        self.copying: set[Instance] = set()

    def delete_from_ssd(self, size: int) -> None:
        """A checkpoint of `size` bytes deleted from this server's SSD: with the group's
        `ssd_delete_s_per_gb`, a flow that holds the SSD's links (and the host's disk) as
        long as the deletion takes alone, shared with the loads there as any flow is (a
        file system that discards freed blocks at once waits on the disk for it)."""
        seconds = size / 1e9 * self.group.ssd_delete_s_per_gb
        if seconds <= 0:
            return
        links = self.paths[Tier.SSD]
        solo = min(self.links.capacity[link] for link in links)
        self.links.start(seconds * solo, links, math.inf, _nothing)

    @property
    def available_gpus(self) -> int:
        """GPUs a new instance could have now: free ones plus those of idle instances
        (`Cluster._reindex` writes the same sum out)."""
        return self.free_gpus + self.idle_gpus

    def cache(self, tier: str) -> CheckpointCache:
        return self.dram if tier == "dram" else self.ssd
