"""A replay's download from the remote store into a server's SSD directory: what an
engine or a checkpoint store does first with a checkpoint that only the store holds."""

from pathlib import Path

from calibration.remote.client import download


def fetch(order: dict, checkpoint: Path) -> int:
    """Download the checkpoint the remote store's `order` names (`{"url", "server",
    "name"}`) into the SSD directory `checkpoint`; its bytes."""
    checkpoint.parent.mkdir(parents=True, exist_ok=True)
    return download(order["url"], order["server"], order["name"], checkpoint).bytes
