"""An instance's start-up: a fresh process that imports torch and creates its device
context, before any checkpoint byte is read; alone, several at once, and beside a load,
the three kinds taking turns.

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
is fitted to (`calibration.measure.host_cores`). With a remote store, a start-up is also
timed beside a download, whose fraction of a core leaves the cores far from saturation:
what it still stretches is the start-up's slowdown in any company (shared caches,
memory bandwidth, SMT siblings), `startup_company_slowdown`.
"""

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from calibration.checkpoint.format import BLOB_NAME
from calibration.checkpoint.pagecache import make_cold, make_warm
from calibration.checkpoint.reader import buffer_bytes
from calibration.measure.disk_readers import LOAD_COMMAND, Readers
from calibration.measure.downloader import downloading
from calibration.measure.measurement import Measurement
from calibration.remote.running import running_store

READY = "ready"
CONCURRENCY = (2, 4)  # start-ups at once, beside the ones timed alone
BESIDE_LOAD = "instance_startup_beside_load"
BESIDE_DOWNLOAD = "instance_startup_beside_download"
BETWEEN_DOWNLOADS = "instance_startup_between_downloads"  # alone, taking turns with those


def measure_startups(
    device: str, runs: int, rounds: int, checkpoint: Path
) -> dict[str, Measurement]:
    """Every start-up figure, the kinds taking turns so that a machine that drifts (a
    neighbour's job, a VM's host) drifts for all of them, and the fit of `host_cores`
    compares start-ups timed under the same conditions:

    - `instance_startup_first`: the very first, apart (it may read torch from disk);
    - `instance_startup`, `instance_startup_cpu`: `runs` alone, wall and CPU seconds;
    - `instance_startup_xK`: `rounds` rounds of K begun at once, each one's wall time;
    - `BESIDE_LOAD`: `runs` one at a time, each begun while a reader process loads
      `checkpoint` cold (evicted before each of its loads).
    """
    first = time_to_ready(spawn(device), time.perf_counter())
    alone: list[tuple[float, float]] = []
    at_once: dict[int, list[float]] = {k: [] for k in CONCURRENCY}
    beside: list[float] = []
    with Readers(1, buffer_bytes(checkpoint)) as reader:
        for turn in range(max(runs, rounds)):
            if turn < runs:
                alone.append(time_to_ready(spawn(device), time.perf_counter()))
            for k in CONCURRENCY if turn < rounds else ():
                at_once[k] += _together(device, k)
            if turn < runs:
                beside.append(beside_a_load(device, reader, checkpoint))
    return {
        "instance_startup_first": Measurement((first[0],), "s", True),
        "instance_startup": Measurement(tuple(wall for wall, _ in alone), "s", True),
        "instance_startup_cpu": Measurement(tuple(cpu for _, cpu in alone), "s", True),
        **{
            f"instance_startup_x{k}": Measurement(tuple(walls), "s", True)
            for k, walls in at_once.items()
        },
        BESIDE_LOAD: Measurement(tuple(beside), "s", True),
    }


def _together(device: str, k: int) -> list[float]:
    """The wall times of `k` start-ups begun at once."""
    started = time.perf_counter()
    children = [spawn(device) for _ in range(k)]
    with ThreadPoolExecutor(k) as pool:
        return [wall for wall, _ in pool.map(time_to_ready, children, [started] * k)]


def beside_a_load(device: str, reader: Readers, checkpoint: Path) -> float:
    """One start-up's wall time, begun once `reader` is loading `checkpoint` cold, which
    it does again and again until the start-up is ready."""
    with loading(reader, checkpoint):
        return time_to_ready(spawn(device), time.perf_counter())[0]


@contextmanager
def loading(reader: Readers, checkpoint: Path) -> Iterator[None]:
    """While inside, `reader` loads `checkpoint` cold again and again (evicted before each
    load); entered once the first load has begun. A failed load is raised on the way out."""
    begun, stop, failed = threading.Event(), threading.Event(), []

    def load_again_and_again() -> None:
        try:
            while not stop.is_set():
                make_cold(str(checkpoint / BLOB_NAME))
                begun.set()
                reader.together(LOAD_COMMAND, [checkpoint])
        except Exception as error:  # raised in the caller's thread, below
            failed.append(error)
        finally:
            begun.set()

    loader = threading.Thread(target=load_again_and_again)
    loader.start()
    try:
        begun.wait()
        if failed:
            raise failed[0]
        yield
    finally:
        stop.set()
        loader.join()
    if failed:
        raise failed[0]


def measure_beside_download(
    device: str, checkpoint: Path, scratch: Path, rate: float, pairs: int
) -> dict[str, Measurement]:
    """A start-up beside a download from the remote store at `rate` (bytes/s), which asks
    a fraction of a core, far below the cores' saturation: how much any company slows a
    start-up before the cores run out (`startup_company_slowdown`). `pairs` times, a
    start-up alone and then one begun while a process downloads `checkpoint` again and
    again, so that drift moves both alike:

    - `BETWEEN_DOWNLOADS`: each start-up alone, wall seconds;
    - `BESIDE_DOWNLOAD`: each start-up beside the downloads.
    """
    alone, beside = [], []
    make_warm(str(checkpoint / BLOB_NAME))  # the store's copy: not this disk's reads
    with running_store(checkpoint.parent, rate) as store:
        for _ in range(pairs):
            alone.append(time_to_ready(spawn(device), time.perf_counter())[0])
            with downloading(store.url, checkpoint.name, scratch / "downloaded"):
                beside.append(time_to_ready(spawn(device), time.perf_counter())[0])
    return {
        BETWEEN_DOWNLOADS: Measurement(tuple(alone), "s", True),
        BESIDE_DOWNLOAD: Measurement(tuple(beside), "s", True),
    }


def spawn(device: str) -> subprocess.Popen:
    code = (
        "import time\n"
        "import torch\n"
        f"torch.zeros(1, device={device!r}).add_(1).sum().item()\n"
        f"print({READY!r}, time.process_time(), flush=True)\n"
    )
    return subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def time_to_ready(child: subprocess.Popen, started: float) -> tuple[float, float]:
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
