"""The remote store's link, as a download sees it: only with `--remote-rate`.

One machine has no network between a store and a server to measure. What it can
measure is what a replay's cold start from the remote tier will get: the store
(`calibration.remote`) paced to the given rate per server, and the real client
downloading a checkpoint through it into an O_DIRECT file on the disk being measured,
synced and renamed into place. The goodput (bytes received over the time to the
checkpoint in place) is at most the rate; what it falls short by is the client's and
the disk's share (a request's round trip, the last range's write, the fsync).

The store serves a copy held in the page cache (read into it before each download),
as a remote store's own disk is not this host's: its reads must not take this disk's
time from the download's writes. Each download replaces the last, one at a time, on
simulated server 0. The CPU-seconds a download takes (the client's process and the
store's) are measured too: on one box the store shares the host's cores with the
servers it serves, as it does in the validation's replays.
"""

import shutil
import time
from collections.abc import Callable
from pathlib import Path

from calibration.checkpoint.format import BLOB_NAME
from calibration.checkpoint.pagecache import make_warm
from calibration.measure.measurement import Measurement
from calibration.remote.client import download
from calibration.remote.running import running_store


def measure_remote(
    checkpoint: Path, scratch: Path, rate: float, runs: int, progress: Callable[[str], None]
) -> dict[str, Measurement]:
    """`remote_download`: `runs` downloads of `checkpoint` through the store at `rate`
    bytes/s into `scratch`, each one's goodput in bytes/s; `remote_download_cpu`, the
    CPU-seconds per byte they took, the client's and the store's together."""
    destination = scratch / "downloaded"
    samples, cpu = [], []
    with running_store(checkpoint.parent, rate) as store:
        for _ in range(runs):
            make_warm(str(checkpoint / BLOB_NAME))
            cpu_before = time.process_time(), store.cpu_s()
            done = download(store.url, 0, checkpoint.name, destination)
            cpu_s = time.process_time() - cpu_before[0] + store.cpu_s() - cpu_before[1]
            samples.append(done.bytes_per_s)
            cpu.append(cpu_s / done.bytes)
            shutil.rmtree(destination)
    results = {
        "remote_download": Measurement(tuple(samples), "bytes/s", False),
        "remote_download_cpu": Measurement(tuple(cpu), "s/byte", False),
    }
    progress(
        f"remote downloads at {rate / 1e6:.0f} MB/s a server: "
        f"{results['remote_download'].median / 1e6:.0f} MB/s goodput, "
        f"{results['remote_download_cpu'].median * 1e9:.2f} CPU-s/GB, client and store "
        f"(medians of {runs})"
    )
    return results
