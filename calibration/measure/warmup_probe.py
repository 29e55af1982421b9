"""An instance's warm-up: what follows its checkpoint load before it serves at speed.

A fresh process loads the reference model's checkpoint with the real loader, as an
instance does, then builds the model from the loaded weights and runs two prefills of
the same prompt. The first pass in a process pays one-time costs the later ones do not
(the allocator's first blocks, each operator's first dispatch; on a GPU its libraries'
handles and kernels' first launch), and the profile's prefill rate is timed after a
warm-up, so it leaves them out. The warm-up is the build plus what the first pass took
beyond the second (`warmup_s`, a fixed stage after the load). It is not scaled by model
size: the build wraps the loaded tensors without copying them, and first dispatch is
paid per operator, not per byte.

`python -m calibration.measure.warmup_probe CHECKPOINT CONFIG DEVICE TOKENS THREADS` is
that process; it prints the build's and both passes' seconds as one JSON line.
"""

import itertools
import json
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

import torch

from calibration.checkpoint.reader import load
from calibration.measure.measurement import Measurement
from calibration.migration.model import ModelConfig, Transformer


def measure_warmup(
    checkpoint: Path, config: ModelConfig, device: str, tokens: int, threads: int | None, runs: int
) -> dict[str, Measurement]:
    """`instance_warmup`: the build plus the first pass's extra, in s, in each of `runs`
    fresh processes that load `checkpoint`, the reference model of `config`."""
    fields = asdict(config) | {"dtype": str(config.dtype).removeprefix("torch.")}
    command = [sys.executable, "-m", __name__, str(checkpoint), json.dumps(fields), device]
    command += [str(tokens), str(threads or 0)]
    samples = tuple(_warmup_s(command) for _ in range(runs))
    return {"instance_warmup": Measurement(samples, "s", False)}


def _warmup_s(command: list[str]) -> float:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"the warm-up probe failed: {last}")
    timed = json.loads(done.stdout)
    return timed["build_s"] + max(0.0, timed["first_s"] - timed["second_s"])


def _probe(checkpoint: Path, config: ModelConfig, device: str, tokens: int) -> dict[str, float]:
    """In the fresh process: the load (untimed), then the build and two passes, timed."""
    weights = load(checkpoint, torch.device(device))
    prompt = list(range(1, tokens + 1))
    stamps = [_now(device)]
    model = Transformer.from_weights(config, weights)
    cache = model.new_cache()
    stamps.append(_now(device))
    for _ in range(2):
        cache.length = 0
        model.prefill(prompt, cache)
        stamps.append(_now(device))
    build, first, second = (b - a for a, b in itertools.pairwise(stamps))
    return {"build_s": build, "first_s": first, "second_s": second}


def _now(device: str) -> float:
    """The time once the device's queued work is done."""
    if device.startswith("cuda"):
        torch.cuda.synchronize(device)
    return time.perf_counter()


def main(argv: list[str]) -> None:
    checkpoint, config_json, device, tokens, threads = argv
    if int(threads):
        torch.set_num_threads(int(threads))
    fields = json.loads(config_json)
    config = ModelConfig(**fields | {"dtype": getattr(torch, fields["dtype"])})
    print(json.dumps(_probe(Path(checkpoint), config, device, int(tokens))))


if __name__ == "__main__":
    main(sys.argv[1:])
