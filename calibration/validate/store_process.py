"""A server's checkpoint store: a long-running process that reads checkpoints into the
server's DRAM cache while the engines that need them start.

ServerlessLLM runs such a store on every server (its `sllm-store`): a cold start's
checkpoint is read from SSD (or downloaded from the remote store first) into host memory
by a process that is already up, while the engine process starts beside it, and the
engine then takes the weights from host memory. The `tiers` scenario's replay runs one
per server (`calibration.validate.scheduler`), started before the trace's first arrival;
its instance processes start with `hold` and load the DRAM copy once the store says it
is there.

`python -m calibration.validate.store_process`. Protocol: JSON lines. On stdin, one order
per cold start from SSD or the remote store, `{"load": ID, "checkpoint": SSD_DIR,
"install": DRAM_DIR, "download": {"url", "server", "name"} or null}`, served one at a
time in order (a server of one GPU starts one instance at a time); stdin's end stops it.
On stdout, `{"event": E, "t": time.monotonic(), ...}`: `up` once, when torch and the
loader are imported; then per order, with its `load`, `began`, `downloaded` (with
`bytes`; from the remote store only) and `stored` (the copy published in DRAM; with
`cpu_s`, the store's CPU-seconds so far).
"""

import json
import sys
import time
from pathlib import Path

from calibration.checkpoint.dram_install import read_into_dram
from calibration.validate.instance_process import emit
from calibration.validate.remote_fetch import fetch


def serve(order: dict) -> None:
    """One order: the checkpoint into the DRAM cache, downloaded to SSD first if asked."""
    load = order["load"]
    emit("began", load=load)
    checkpoint = Path(order["checkpoint"])
    if order["download"] is not None:
        emit("downloaded", load=load, bytes=fetch(order["download"], checkpoint))
    with read_into_dram(checkpoint, Path(order["install"])):
        pass  # the bytes are in the cache file; its tensors are the engine's to map
    emit("stored", load=load, cpu_s=time.process_time())


def main() -> None:
    emit("up")
    for line in sys.stdin:
        serve(json.loads(line))


if __name__ == "__main__":
    main()
