"""One model instance of the real replay: a fresh process, as a serverless platform starts.

`python -m calibration.validate.instance SPEC_JSON` imports torch (the start-up cost the
profile's `instance_startup_s` measures), loads the checkpoint with the real loader from
the tier the scheduler chose (an SSD copy is evicted from the page cache first, so the
read is really cold, and read into the server's DRAM cache on its way; a DRAM copy is a
file on /dev/shm, which the loader maps, as it does any cached checkpoint), then serves
requests as the simulator's instance does (`sim/instance.py`): prompts prefilled one at
a time, first come first served, decoding paused meanwhile, the first token out of the
prefill; then one `decode_batch` step at a time over every decoding request. It runs on
the device the scheduler names (`calibration.validate.devices`): the server's CUDA
device, or the CPU.

The decode rows share one position counter: the model has no padding mask, so sequences
of different lengths cannot share a batch exactly. Each step's compute is that of the
real batch (dominated by reading the weights); the tokens are not each request's own
continuation, which timing does not need.

Protocol: JSON lines. On stdin, `{"admit": id, "input": n, "output": m}`; the scheduler
kills an instance to stop it, and stdin's end stops it too, should the scheduler die. On
stdout, `{"event": E, "t": time.monotonic(), ...}` for E in `started` (torch imported, and
on a GPU its context made; with `cpu_s`, the CPU-seconds that took),
`loaded`, `installed`, `ready`, and `first` and `done` (with `request`).
"""

import json
import mmap
import queue
import shutil
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from calibration.checkpoint.format import BLOB_NAME, INDEX_NAME
from calibration.checkpoint.pagecache import make_cold
from calibration.checkpoint.reader import buffer_bytes, load
from calibration.migration.model import KVCache, ModelConfig, Transformer
from sim.common.publish import staged_directory


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


def shared_buffer(path: Path, nbytes: int) -> torch.Tensor:
    """A uint8 tensor whose memory is the file `path` (on /dev/shm: the DRAM cache)."""
    with open(path, "w+b") as handle:
        handle.truncate(nbytes)
        region = mmap.mmap(handle.fileno(), nbytes)
    return torch.frombuffer(region, dtype=torch.uint8)  # keeps `region` alive


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
    if spec.install is None:
        weights = load(path, device)
        _synchronize(device)
        emit("loaded")
    else:
        make_cold(str(path / BLOB_NAME))
        with staged_directory(Path(spec.install), "installed checkpoint") as staging:
            shutil.copyfile(path / INDEX_NAME, staging / INDEX_NAME)
            weights = load(path, out=shared_buffer(staging / BLOB_NAME, buffer_bytes(path)))
            weights = {name: tensor.to(device) for name, tensor in weights.items()}
            _synchronize(device)
            emit("loaded")
        emit("installed")
    return Transformer.from_weights(ModelConfig(**spec.config), weights)


def _synchronize(device: torch.device) -> None:
    """Wait for the device's queued work, so that a stamp marks its end."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class Engine:
    """The batch: a FIFO of prompts to prefill and the decoding requests' tokens left."""

    def __init__(self, model: Transformer, max_batch: int) -> None:
        self.model = model
        self.prefill: list[tuple[int, int, int]] = []  # (request, input, output)
        self.decoding: dict[int, int] = {}  # request -> tokens left to generate
        self.cache = KVCache.empty(model.config, max_batch, model.device)
        self.position = 0

    def busy(self) -> bool:
        return bool(self.prefill or self.decoding)

    def admit(self, request: int, input_tokens: int, output_tokens: int) -> None:
        self.prefill.append((request, input_tokens, output_tokens))

    def step(self) -> None:
        """A prefill if one is waiting, else one decode step of the batch."""
        if self.prefill:
            request, input_tokens, output_tokens = self.prefill.pop(0)
            vocab = self.model.config.vocab
            prompt = [(request * 7919 + k) % vocab for k in range(input_tokens)]
            self.model.prefill(prompt, self.model.new_cache())
            _synchronize(self.model.device)
            emit("first", request=request)
            if output_tokens > 1:
                self.decoding[request] = output_tokens - 1
            else:
                emit("done", request=request)
            return
        batch = len(self.decoding)
        if self.position + 1 >= self.model.config.max_positions:
            self.position = 0
        view = KVCache(
            [k[:batch] for k in self.cache.keys],
            [v[:batch] for v in self.cache.values],
            self.position,
        )
        self.model.decode_batch(torch.zeros(batch, dtype=torch.long), view)
        _synchronize(self.model.device)
        self.position += 1
        for request in list(self.decoding):
            self.decoding[request] -= 1
            if not self.decoding[request]:
                del self.decoding[request]
                emit("done", request=request)


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
    model = load_checkpoint(spec)
    emit("ready")
    inbox: queue.Queue[dict | None] = queue.Queue()
    threading.Thread(target=read_commands, args=(inbox,), daemon=True).start()
    engine = Engine(model, spec.max_batch)
    while True:  # every command that has come in first, then one step of work
        try:
            command = inbox.get(block=not engine.busy())
        except queue.Empty:
            engine.step()
            continue
        if command is None:
            return
        engine.admit(command["admit"], command["input"], command["output"])


if __name__ == "__main__":
    main()
