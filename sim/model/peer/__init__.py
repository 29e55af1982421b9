"""Peer loading with multicast chains (docs/peer-loading.md): a new instance loads its
checkpoint from the GPUs of a warm instance of its model, and instances starting together
forward it down a chain."""

from sim.model.peer.chain import Chain
from sim.model.peer.tier import PeerLoad, PeerTier

__all__ = ["Chain", "PeerLoad", "PeerTier"]
