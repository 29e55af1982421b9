"""Storage figures of a profile: the raw device, the real loader and safetensors, cold and warm.

On a checkpoint in the directory being measured (random bytes in a Llama's shapes at a
chosen size, or the user's own tensors), `measure_storage` times:

- the raw device: O_DIRECT reads into a pre-faulted buffer over a sweep of request
  sizes and thread counts, the configurations taking turns for a few rounds (the
  physical limit; the configuration with the best median is kept);
- thaw's `load`, cold (pages evicted and checked with mincore: guest-cold, since a
  cache behind a virtual disk may survive eviction) and warm (the file in the page
  cache, as a checkpoint held in host memory is), into a reused device buffer, timed
  until it returns: by then every byte is on the device and its checksum verified;
- safetensors `load_file`, cold and warm, with every byte touched afterwards, since its
  mmap defers the real cost: the baseline a user would otherwise have.

Variants interleave within each run, so a disk that drifts drifts for all of them.
Rates are bytes of tensor payload (raw: of the blob) per second of wall time.
"""

import itertools
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from calibration.checkpoint.buffers import host_buffer
from calibration.checkpoint.direct_io import BLOCK, open_direct
from calibration.checkpoint.format import BLOB_NAME, CheckpointError, payload_bytes
from calibration.checkpoint.pagecache import PageCacheError, make_cold, make_warm
from calibration.checkpoint.reader import buffer_bytes, choose_direct, load
from calibration.checkpoint.sources import read_source
from calibration.checkpoint.writer import write_checkpoint
from calibration.measure.measurement import Measurement, seconds
from calibration.measure.raw_read import raw_read
from calibration.measure.synthetic import llama_shapes, random_bf16
from calibration.measure.touch import touch
from thaw_kernel.errors import InputError

Progress = Callable[[str], None]


@dataclass(frozen=True)
class StorageFiles:
    """The same tensors as a thaw checkpoint and as a safetensors file."""

    checkpoint: Path
    safetensors: Path

    @property
    def blob(self) -> Path:
        return self.checkpoint / BLOB_NAME

    @property
    def payload_bytes(self) -> int:
        return payload_bytes(self.checkpoint)


class NotADisk(InputError):
    """The directory to measure is not on a disk: its reads would come from memory."""


def require_a_disk(directory: Path) -> None:
    """Raise `NotADisk` unless files in `directory` allow O_DIRECT reads and leave the
    page cache when evicted; on tmpfs the file is the page cache."""
    probe = directory / "disk-probe"
    probe.write_bytes(bytes(16 * BLOCK))
    try:
        fd, refusal = open_direct(str(probe))
        if fd is None:
            raise NotADisk(f"{directory}: O_DIRECT refused ({refusal})")
        os.close(fd)
        make_cold(str(probe))
    except PageCacheError as err:
        raise NotADisk(str(err)) from None
    finally:
        probe.unlink()


def prepare(directory: Path, size: int, source: Path | None = None) -> StorageFiles:
    """Write the tensors to measure into `directory`: `source`'s, or random ones of about
    `size` (at least one Llama layer's worth)."""
    tensors = _unshared(read_source(source)) if source else random_bf16(llama_shapes(size))
    if not tensors:
        raise CheckpointError(f"{source}: holds no tensors")
    files = StorageFiles(directory / "checkpoint", directory / "model.safetensors")
    save_file(tensors, files.safetensors)
    write_checkpoint(tensors, files.checkpoint)
    return files


def measure_storage(
    files: StorageFiles,
    device: str,
    runs: int,
    grid: list[tuple[int, int]],
    sweep_rounds: int,
    progress: Progress,
) -> dict[str, Measurement]:
    """Every storage measurement of the profile, by name (see the module's docstring):
    `runs` interleaved rounds of the variants, after `sweep_rounds` of the raw sweep."""
    size = buffer_bytes(files.checkpoint)
    host = host_buffer(size)
    out = host if device == "cpu" else torch.empty(size, dtype=torch.uint8, device=device)
    results = _raw_sweep(files.blob, host, grid, sweep_rounds)
    chunk, threads = max(grid, key=lambda config: results[_sweep_name(*config)].median)
    progress(f"raw O_DIRECT sweep: best {_sweep_name(chunk, threads).removeprefix('raw_cold_')}")
    payload, blob_bytes = files.payload_bytes, files.blob.stat().st_size
    variants: dict[str, Callable[[], object]] = {
        "raw": lambda: raw_read(files.blob, host, chunk, threads),
        "loader": lambda: _synchronize(device, load(files.checkpoint, device, out=out)),
        "safetensors": lambda: touch(load_file(files.safetensors, device=device)),
    }
    samples: dict[str, list[float]] = {}
    for _, state, name in itertools.product(range(runs), ("cold", "warm"), variants):
        if name == "raw" and state == "warm":
            continue  # O_DIRECT bypasses the page cache: warm is the same read
        source = files.safetensors if name == "safetensors" else files.blob
        (make_cold if state == "cold" else make_warm)(str(source))
        if name == "loader" and choose_direct(source, "auto") != (state == "cold"):
            raise RuntimeError(f"{source}: the loader would not read it {state} as intended")
        took = seconds(variants[name])
        samples.setdefault(f"{name}_{state}", []).append(
            (blob_bytes if name == "raw" else payload) / took
        )
    for key, rates in samples.items():
        results[key] = Measurement(tuple(rates), "bytes/s", key.endswith("warm"))
        progress(f"{key.replace('_', ' ')}: {results[key].median / 1e9:.2f} GB/s (median)")
    return results


def _unshared(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Contiguous tensors with storage of their own: tied weights (one tensor under two
    names, as many state dicts hold) are copied, since safetensors refuses to save them."""
    seen: set[int] = set()
    unshared = {}
    for name, tensor in tensors.items():
        tensor = tensor.contiguous()
        pointer = tensor.untyped_storage().data_ptr()
        unshared[name] = tensor.clone() if pointer in seen else tensor
        seen.add(pointer)
    return unshared


def _synchronize(device: str, tensors: object) -> object:
    """`tensors`, once a GPU's queued copies into them are done."""
    if device != "cpu":
        torch.cuda.synchronize()
    return tensors


def _raw_sweep(
    blob: Path, buffer: torch.Tensor, grid: list[tuple[int, int]], rounds: int
) -> dict[str, Measurement]:
    """`rounds` cold O_DIRECT reads for each (request bytes, threads) of the grid, the
    configurations taking turns, so that no single read (a neighbour's burst on a
    shared disk) chooses the configuration."""
    size = blob.stat().st_size
    rates: dict[str, list[float]] = {}
    for _, (chunk, threads) in itertools.product(range(rounds), grid):
        make_cold(str(blob))
        rate = size / raw_read(blob, buffer, chunk, threads)
        rates.setdefault(_sweep_name(chunk, threads), []).append(rate)
    return {name: Measurement(tuple(rate), "bytes/s", False) for name, rate in rates.items()}


def _sweep_name(chunk: int, threads: int) -> str:
    return f"raw_cold_{chunk // 2**20}MiB_x{threads}"
