"""Where the replay's instances run: on CUDA devices when the machine has any, else on
the CPU (each instance on one thread), so the same command validates a GPU machine and
this one.

With fewer devices than servers, servers take the devices in turn and share them (a box
with one GPU runs both of a scenario's servers on it). Their copies to the device and
their inference then share one device, which the simulator does not model; the report
says how many servers each device carries (`servers_per_device`). The scenarios' loads
are gigabytes read at a disk's or the store's rate, their decoders tens of MB, so a
copy over a device's link (tens of GB/s) is a small part of a cold start either way."""

import math

import torch


def count() -> int:
    """CUDA devices the replay can use: 0 where torch has none."""
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def kind() -> str:
    """ "cuda" when the machine has a CUDA device, else "cpu"."""
    return "cuda" if count() else "cpu"


def server_device(server: int, devices: int | None = None) -> str:
    """The device server `server`'s instances run on among `devices` CUDA devices (this
    machine's by default): "cuda:N", the devices in turn by the server's index, or
    "cpu" where there are none."""
    devices = count() if devices is None else devices
    return f"cuda:{server % devices}" if devices else "cpu"


def servers_per_device(servers: int, devices: int | None = None) -> int:
    """The most servers one of `devices` CUDA devices (this machine's by default)
    carries; 0 where there are none."""
    devices = count() if devices is None else devices
    return math.ceil(servers / devices) if devices else 0
