"""A process that downloads one checkpoint through the remote store again and again: the
company a start-up meets beside a cold start from the remote tier.

`python -m calibration.measure.downloader URL NAME DEST` fetches `NAME` from the store at
`URL` into `DEST` (with the real client, `calibration.remote.client`), removes it, and
starts over, until it is killed.
"""

import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from calibration.remote.client import download

SETTLE_S = 1.0  # the downloads run this long before the block begins


@contextmanager
def downloading(url: str, name: str, dest: Path) -> Iterator[subprocess.Popen]:
    """While inside, a process downloads `name` from the store at `url` into `dest` again
    and again (begun `SETTLE_S` before); `dest` is removed on the way out."""
    command = [sys.executable, "-m", __name__, url, name, str(dest)]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(SETTLE_S)
        if process.poll() is not None:
            last = (process.communicate()[1].strip().splitlines() or ["no output"])[-1]
            raise RuntimeError(f"the downloading process failed: {last}")
        yield process
    finally:
        process.kill()
        process.communicate()
        shutil.rmtree(dest, ignore_errors=True)


def main(argv: list[str]) -> None:
    url, name, dest = argv
    while True:
        download(url, 0, name, Path(dest))
        shutil.rmtree(dest)


if __name__ == "__main__":
    main(sys.argv[1:])
