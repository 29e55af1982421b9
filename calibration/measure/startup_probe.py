"""An instance's start-up: a fresh process that imports torch and creates its device
context, before any checkpoint byte is read; alone, and several at once.

Timed from outside, as a scheduler sees it: from spawning the process to its word that
one tiny operation on the device is done (which, on a GPU, creates the CUDA context);
its exit, and the context's teardown, are not counted. The process also reports the CPU
time it spent until then (its own clock), the start-up's CPU-bound part. The first run is
kept apart: it may read torch's libraries from disk, where the later ones find them in
the page cache, as they would on a serving machine that has started instances before.
Start-ups at once (`CONCURRENCY`) share the host's cores, and so does a start-up beside
a load from SSD (a reader process loading a cold checkpoint again and again while
start-ups are timed one at a time: the page faults, copies and checksums of a load take
cores a start-up wants, and on the project's VM a real replay's start-ups stretched more
beside a load than beside another start-up). How much they stretch is what `host_cores`
is fitted to (`calibration.measure.host_cores`).
"""

import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from calibration.checkpoint.format import BLOB_NAME
from calibration.checkpoint.pagecache import make_cold
from calibration.checkpoint.reader import buffer_bytes
from calibration.measure.disk_readers import LOAD_COMMAND, Readers
from calibration.measure.measurement import Measurement

READY = "ready"
CONCURRENCY = (2, 4)  # start-ups at once, beside the ones timed alone
BESIDE_LOAD = "instance_startup_beside_load"


def measure_startup(device: str, runs: int) -> dict[str, Measurement]:
    """`instance_startup` (the runs after the first), `instance_startup_first` and
    `instance_startup_cpu` (CPU-seconds of the runs after the first), in s."""
    samples = [_time_to_ready(_spawn(device), time.perf_counter()) for _ in range(runs + 1)]
    return {
        "instance_startup_first": Measurement((samples[0][0],), "s", True),
        "instance_startup": Measurement(tuple(wall for wall, _ in samples[1:]), "s", True),
        "instance_startup_cpu": Measurement(tuple(cpu for _, cpu in samples[1:]), "s", True),
    }


def measure_concurrent_startup(device: str, rounds: int) -> dict[str, Measurement]:
    """`instance_startup_xK`: each start-up's wall time when K begin at once, in s."""
    results = {}
    for k in CONCURRENCY:
        samples: list[float] = []
        for _ in range(rounds):
            started = time.perf_counter()
            children = [_spawn(device) for _ in range(k)]
            with ThreadPoolExecutor(k) as pool:
                timed = pool.map(_time_to_ready, children, [started] * k)
                samples += [wall for wall, _ in timed]
        results[f"instance_startup_x{k}"] = Measurement(tuple(samples), "s", True)
    return results


def measure_startup_beside_load(device: str, runs: int, checkpoint: Path) -> dict[str, Measurement]:
    """`BESIDE_LOAD`: `runs` start-ups' wall times, one at a time, each begun while a
    reader process loads `checkpoint` cold (evicted before each of its loads), in s."""
    samples: list[float] = []
    with Readers(1, buffer_bytes(checkpoint)) as reader:
        loading, stop, failed = threading.Event(), threading.Event(), []

        def load_again_and_again() -> None:
            try:
                while not stop.is_set():
                    make_cold(str(checkpoint / BLOB_NAME))
                    loading.set()
                    reader.together(LOAD_COMMAND, [checkpoint])
            except Exception as error:  # raised in the timing thread, below
                failed.append(error)
            finally:
                loading.set()

        loader = threading.Thread(target=load_again_and_again)
        loader.start()
        try:
            loading.wait()
            for _ in range(runs):
                if failed:
                    break
                samples.append(_time_to_ready(_spawn(device), time.perf_counter())[0])
        finally:
            stop.set()
            loader.join()
    if failed:
        raise failed[0]
    return {BESIDE_LOAD: Measurement(tuple(samples), "s", True)}


def _spawn(device: str) -> subprocess.Popen:
    code = (
        "import time\n"
        "import torch\n"
        f"torch.zeros(1, device={device!r}).add_(1).sum().item()\n"
        f"print({READY!r}, time.process_time(), flush=True)\n"
    )
    return subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _time_to_ready(child: subprocess.Popen, started: float) -> tuple[float, float]:
    """Seconds from `started` until `child` said it was ready, and its CPU-seconds then."""
    with child:
        line = child.stdout.readline()
        ready = time.perf_counter()
        _, errors = child.communicate()
    word, _, cpu = line.strip().partition(" ")
    if word != READY or child.returncode:
        last = (errors.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"the start-up probe failed: {last}")
    return ready - started, float(cpu)
