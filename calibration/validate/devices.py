"""Where the replay's instances run: one CUDA device per server when the machine has
enough, else the CPU (each instance on one thread), so the same command validates a GPU
machine and this one."""

import torch


def kind(servers: int) -> str:
    """ "cuda" when every server can have a CUDA device of its own, else "cpu"."""
    if torch.cuda.is_available() and torch.cuda.device_count() >= servers:
        return "cuda"
    return "cpu"


def server_device(server: int, servers: int) -> str:
    """The device server `server`'s instances run on: "cuda:N" (device N = the server's
    index) or "cpu"."""
    return f"cuda:{server}" if kind(servers) == "cuda" else "cpu"
