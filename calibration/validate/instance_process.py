"""One model instance of the real replay: a fresh process, as a serverless platform starts.

`python -m calibration.validate.instance_process SPEC_JSON` imports torch (the start-up
cost the profile's `instance_startup_s` measures), loads the checkpoint with the real
loader from the tier the scheduler chose (from the remote store, it is first downloaded
into the server's SSD directory, `calibration.remote`; an SSD copy is evicted from the
page cache first, so the read is really cold, and read into the server's DRAM cache on
its way; a DRAM copy is a file on /dev/shm, which the loader maps, as it does any cached
checkpoint), drops the checkpoint's `ballast` (bytes carried to make the load the size
the scenario wants, not computed with), then serves
requests as the simulator's instance does, and takes part in live migrations, either
side (`calibration.validate.engine`). It runs on the device the scheduler names
(`calibration.validate.devices`): the server's CUDA device, or the CPU.

Protocol: JSON lines. On stdin, `{"admit": id, "input": n, "output": m}`; for a
migration's source `{"snapshot": {"threshold": x, "rounds": k, "max_rounds": m}}`; for
its destination `{"recompute": [HANDOVER, ...]}` and `{"adopt": [HANDOVER, ...],
"waiting": [HANDOVER, ...]}`, a HANDOVER being `{"request", "tokens", "output",
"generated"}`; with `hold`, first any line, before it loads. The
scheduler kills an instance to stop it, and stdin's end stops it too, should the
scheduler die. On stdout, `{"event": E, "t": time.monotonic(), ...}` for E in `started`
(torch imported, and on a GPU its context made; with `cpu_s`, the CPU-seconds that
took), `downloaded` (from the remote store, with `bytes`), `read` (a load from SSD's
bytes in host memory, before any copy to a GPU; with `cpu_s`, the CPU-seconds so far),
`loaded`, `installed`, `ready`, `first` (with `request`), `done` (with `request` and
`generated`, its output tokens in all), and for migrations `tokens` (with `requests`,
`new`, `stopped` and, once stopped, `waiting`), `recomputed` (with `tokens`) and
`resumed` (with `requests`).
"""

import json
import queue
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from calibration.checkpoint.dram_install import read_into_dram
from calibration.checkpoint.reader import load
from calibration.migration.model import ModelConfig, Transformer
from calibration.validate.engine import Engine
from calibration.validate.remote_fetch import fetch

# The tensor a `tiers` checkpoint carries to reach its size: loaded, then dropped.
BALLAST = "ballast"


def emit(event: str, **fields: object) -> None:
    """One line on stdout, stamped with the clock every process of the replay shares."""
    sys.stdout.write(json.dumps({"event": event, "t": time.monotonic(), **fields}) + "\n")
    sys.stdout.flush()


@dataclass
class Spec:
    """What the scheduler passes on the command line."""

    config: dict
    checkpoint: str  # the directory to load from
    install: str | None  # for a load from SSD: the DRAM cache directory it goes into
    max_batch: int
    device: str = "cpu"  # or the server's CUDA device, "cuda:N"
    # From the remote store: {"url", "server", "name"}, downloaded into `checkpoint` first.
    download: dict | None = None
    # Once started, wait for a line on stdin before loading: the disk probe's
    # (`calibration.validate.reprobe`), so that several instances' loads begin together,
    # each cold; and, where a checkpoint store reads the checkpoint into DRAM
    # (`calibration.validate.store_process`), until its copy is there.
    hold: bool = False


def load_checkpoint(spec: Spec) -> Transformer:
    """The model on its device, loaded with the real loader.

    From SSD, the blob is first evicted from the page cache (a cold read), and it is read
    straight into a new DRAM cache file: the checkpoint is installed in DRAM on its way,
    as the simulator assumes; on the CPU the model then uses that copy, on a GPU it is
    copied over (the simulator's PCIe leg). Published atomically (`installed`) once the
    load is done. From DRAM the loader maps the cached file on the CPU and reads it onto
    a GPU.
    """
    path = Path(spec.checkpoint)
    device = torch.device(spec.device)
    if spec.download is not None:
        emit("downloaded", bytes=fetch(spec.download, path))
    if spec.install is None:
        weights = load(path, device)
        _synchronize(device)
        emit("loaded")
    else:
        with read_into_dram(path, Path(spec.install)) as weights:
            emit("read", cpu_s=time.process_time())  # in host memory, not yet on a GPU
            weights = {name: tensor.to(device) for name, tensor in weights.items()}
            _synchronize(device)
            emit("loaded")
        emit("installed")
    weights.pop(BALLAST, None)
    return Transformer.from_weights(ModelConfig(**spec.config), weights)


def _synchronize(device: torch.device) -> None:
    """Wait for the device's queued work, so that a stamp marks its end."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def read_commands(inbox: "queue.Queue[dict | None]") -> None:
    for line in sys.stdin:
        inbox.put(json.loads(line))
    inbox.put(None)  # the scheduler closed stdin: stop


def main() -> None:
    spec = Spec(**json.loads(sys.argv[1]))
    if spec.device.startswith("cuda"):
        torch.zeros(1, device=spec.device)  # the device context: part of the start-up
    emit("started", cpu_s=time.process_time())  # CPU-seconds so far: the runtime's own work
    torch.set_num_threads(1)
    if spec.hold and not sys.stdin.readline():
        return  # stdin's end, before the word to load
    model = load_checkpoint(spec)
    emit("ready")
    inbox: queue.Queue[dict | None] = queue.Queue()
    threading.Thread(target=read_commands, args=(inbox,), daemon=True).start()
    engine = Engine(model, spec.max_batch, emit)
    while True:  # every command that has come in first, then one step of work
        try:
            command = inbox.get(block=not engine.busy())
        except queue.Empty:
            engine.step()
            continue
        if command is None:
            return
        obey(engine, command)


def obey(engine: Engine, command: dict) -> None:
    if "admit" in command:
        engine.admit(command["admit"], command["input"], command["output"])
    elif "snapshot" in command:
        engine.snapshot(**command["snapshot"])
    elif "recompute" in command:
        engine.recompute(command["recompute"])
    else:
        engine.adopt(command["adopt"], command["waiting"])


if __name__ == "__main__":
    main()
