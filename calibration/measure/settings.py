"""How much `python -m calibration.measure` measures: a quick pass for CI, or a full one
for a profile.

The reference model is `calibration.migration.model`'s decoder at a size that suits the
device: for `--quick`, a few MB on a CPU and about 160 MB in bf16 on a GPU; else about
0.5 GB in fp32 on a CPU (a prefill of 2,048 tokens then takes seconds, not minutes) and
about 2.2 GB in bf16 on a GPU (a 1.1B-parameter Llama shape). Full runs sweep batch
sizes 1..16, prompts up to several thousand tokens, the raw read over request sizes and
threads. Storage rounds are cheap beside a start-up (a process importing torch), so
`--quick` repeats them more: the loader is judged against the raw device by them
(`calibration.measure.plausibility`).
"""

from dataclasses import dataclass, replace

import torch

from calibration.migration.model import ModelConfig

MiB = 2**20
# Each of the four concurrent readers' copies, at most: four copies and four buffers of
# it take 2 GiB of disk and of memory, and a round of four reads 2 GiB, a second or two
# on a disk of 1-2 GB/s, long beside a process's start of reading.
READER_BYTES = 512 * MiB
# On a CPU device, inference runs on one thread, as each worker of a CPU replay does
# (`calibration.validate`): torch's multi-threaded kernels stalled by tens of ms whenever
# another process held a core of this 2-core VM, which measured the neighbours.
CPU_INFERENCE_THREADS = 1

QUICK_MODEL = ModelConfig(
    layers=2, hidden=256, heads=4, kv_heads=2, intermediate=704, vocab=4096, max_positions=1024
)
CPU_MODEL = ModelConfig(
    layers=8,
    hidden=1024,
    heads=16,
    kv_heads=4,
    intermediate=2816,
    vocab=16384,
    max_positions=4096,
)
# On a GPU the quick model above is small enough that a pass is mostly its kernels'
# launches whatever its tokens, and the prefill and migration fits refuse timings that do
# not grow with the tokens (`derivation.derive`): a quick pass there uses a model whose
# passes grow with them, four of CPU_MODEL's layers in bf16.
GPU_QUICK_MODEL = replace(CPU_MODEL, layers=4, dtype=torch.bfloat16)
GPU_MODEL = ModelConfig(
    layers=16,
    hidden=2048,
    heads=16,
    kv_heads=8,
    intermediate=5632,
    vocab=32000,
    max_positions=8192,
    dtype=torch.bfloat16,
)


@dataclass(frozen=True)
class Settings:
    checkpoint_bytes: int
    runs: int  # interleaved rounds of the storage figures; repetitions of each copy
    reader_bytes: int  # each concurrent reader's copy (`disk_readers`), also downloaded
    remote_downloads: int  # downloads through the remote store, with --remote-rate
    startup_runs: int  # start-ups timed, alone and beside a load (a process each, dear)
    startup_rounds: int  # rounds of start-ups at once, per concurrency level
    raw_grid: tuple[tuple[int, int], ...]  # (request bytes, threads) of the raw sweep
    sweep_rounds: int  # cold reads of each configuration of the raw sweep, in turns
    model: ModelConfig
    decode_batches: tuple[int, ...]
    decode_steps: int
    prefill_lengths: tuple[int, ...]
    prefill_runs: int
    migration_lengths: tuple[int, ...]
    migration_runs: int
    migration_new_tokens: int


def settings(device: str, quick: bool, size: int | None, runs: int | None) -> Settings:
    """The settings for `device`; `size` overrides the checkpoint's, `runs` the rounds of
    the storage, copy and start-up figures."""
    gpu = device != "cpu"
    if quick:
        base = Settings(
            checkpoint_bytes=64 * MiB,
            runs=6,
            reader_bytes=64 * MiB,
            remote_downloads=3,
            startup_runs=3,
            startup_rounds=2,
            raw_grid=((16 * MiB, 1), (16 * MiB, 4)),
            sweep_rounds=3,
            model=GPU_QUICK_MODEL if gpu else QUICK_MODEL,
            decode_batches=(1, 2, 4),
            decode_steps=5,
            prefill_lengths=(128, 512, 2048) if gpu else (32, 128, 512),
            prefill_runs=5,
            migration_lengths=(16, 512, 2048) if gpu else (16, 128, 512),
            migration_runs=5,
            migration_new_tokens=24,
        )
    else:
        base = Settings(
            checkpoint_bytes=2048 * MiB,
            runs=5,
            reader_bytes=READER_BYTES,
            remote_downloads=3,
            startup_runs=5,
            startup_rounds=3,
            raw_grid=tuple(
                (chunk * MiB, threads) for chunk in (1, 4, 16, 64) for threads in (1, 2, 4)
            ),
            sweep_rounds=2,
            model=GPU_MODEL if gpu else CPU_MODEL,
            decode_batches=(1, 2, 4, 8, 16),
            decode_steps=20,
            prefill_lengths=(128, 512, 1024, 2048, 4096) if gpu else (128, 512, 1024, 2048),
            prefill_runs=5,
            migration_lengths=(16, 64, 256, 1024, 2048),
            migration_runs=5,
            migration_new_tokens=128,
        )
    return replace(
        base,
        checkpoint_bytes=size or base.checkpoint_bytes,
        reader_bytes=min(size or base.reader_bytes, READER_BYTES),
        runs=runs or base.runs,
        startup_runs=runs or base.startup_runs,
    )
