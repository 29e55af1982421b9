"""Where an instance's weights come from, fastest first.

A request that joins a warm instance reads nothing (`WARM`: the weights are already on
its GPUs); a cold start loads the checkpoint from the fastest tier of its server that
holds it: the server's DRAM cache, its SSD cache, or the remote store that holds every
checkpoint, or (with `peer_loading` on, docs/peer-loading.md) from the GPUs of a warm
instance of the same model (`PEER`). A `StrEnum`, so a tier is also its name in configs,
tables and summaries.
"""

from enum import StrEnum


class Tier(StrEnum):
    WARM = "warm"
    DRAM = "dram"
    SSD = "ssd"
    REMOTE = "remote"
    PEER = "peer"


CACHE_TIERS = (Tier.DRAM, Tier.SSD)  # a server's caches, which hold whole checkpoints
LOAD_TIERS = (Tier.DRAM, Tier.SSD, Tier.REMOTE, Tier.PEER)  # where a cold start loads from
START_TIERS = (Tier.WARM, *LOAD_TIERS)  # how a request's instance got its weights
