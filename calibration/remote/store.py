"""The store: a tornado server of the files under a root directory, paced per server.

A request for `/s{K}/{path}` is the file `path` under the root as simulated server K
sees it: all responses under the same K at once share K's rate (bytes/s), as the flows
on one server's `network` link share it in the simulator; different K do not interact.
Tornado's `StaticFileHandler` does the HTTP: `Range` (206 with `Content-Range`, 416 with
`bytes */SIZE`, 200 for the whole file), `Accept-Ranges`, `Content-Length`.

Pacing: the body goes out in chunks of `CHUNK_BYTES`, and before each chunk is flushed
the response waits for its turn on K's `Pacer`, which hands out back-to-back slots of
`chunk / rate` seconds in order of asking. Responses under one K take turns chunk by
chunk, so each gets an equal share of the rate, and a response alone gets all of it;
a slot nobody asked for is lost, as link time is (a gap under `TURNAROUND_S` between a
response's own chunks is its turnaround, and is not). A chunk is sent when its slot
ends, and a response's slots begin no earlier than it asked, so its B bytes never
arrive in under B / rate seconds. Chunks of a MiB keep the event loop's work per byte
small (the 64 KiB default costs a wake-up per 64 KiB) while a slot stays short beside
any download worth timing (6 ms at 160 MB/s).

No ETag: the base class would hash the file's first 64 MiB for one, on the event loop,
and cache it for the life of the process.
"""

import asyncio
import os
from collections.abc import Awaitable, Callable, Generator
from pathlib import Path

from tornado.httpserver import HTTPServer
from tornado.netutil import bind_sockets
from tornado.web import Application, HTTPError, StaticFileHandler

from thaw_kernel import bounds

HOST = "127.0.0.1"  # loopback only: the store is a stand-in, never a service
CHUNK_BYTES = 2**20
# A response's chunk asked for this soon after its own last slot ended follows on at
# once: the gap is the sender's own turnaround (flushing the last chunk into the socket, reading the
# next from the file: about 2 ms a MiB here), not a pause of the flow, and counting it
# as idle link time cost a backlogged download a quarter of its rate at 160 MB/s.
TURNAROUND_S = 0.01
SERVER_PATH = r"/s([0-9]{1,9})/(.+)"  # /s{K}/{path}


class Pacer:
    """One simulated server's link: slots of `bytes / rate` seconds, one after another,
    in the order they are asked for."""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self._free = 0.0  # when the link is next free, on the event loop's clock
        self._last: object = None  # whose slot that was

    def reserve(self, now: float, nbytes: int, owner: object) -> float:
        """Book the next slot for `owner`'s `nbytes`, asked for at `now`; when it ends."""
        turnaround = owner is self._last and self._free <= now <= self._free + TURNAROUND_S
        self._free = (self._free if turnaround else max(now, self._free)) + nbytes / self.rate
        self._last = owner
        return self._free

    async def take(self, nbytes: int, owner: object) -> None:
        """Wait until a slot for `nbytes` has passed (the chunk then goes out)."""
        now = asyncio.get_running_loop().time()
        await asyncio.sleep(self.reserve(now, nbytes, owner) - now)


class PacedFileHandler(StaticFileHandler):
    """`StaticFileHandler` under `/s{K}/`, its body paced by K's `Pacer`."""

    def initialize(self, path: str, pacers: dict[int, Pacer], rate: float) -> None:
        super().initialize(path)
        self.pacers = pacers
        self.rate = rate
        self.pending = 0
        self.pacer: Pacer | None = None

    async def get(self, server: str, path: str, include_body: bool = True) -> None:
        k = int(server)
        if k >= bounds.SERVERS:
            raise HTTPError(404)
        self.pacer = self.pacers.setdefault(k, Pacer(self.rate))
        await super().get(path, include_body)

    def head(self, server: str, path: str) -> Awaitable[None]:
        return self.get(server, path, include_body=False)

    def compute_etag(self) -> str | None:
        return None

    def write(self, chunk: str | bytes | dict) -> None:
        super().write(chunk)
        if isinstance(chunk, bytes):
            self.pending += len(chunk)

    def flush(self, include_footers: bool = False) -> "asyncio.Future[None]":
        """Flush, after the pending body bytes' slot on the server's link.

        Not a coroutine: `finish` calls `flush(include_footers=True)` without awaiting
        it, and then the bytes must go out at once (by then `get` has flushed, and paced,
        every chunk)."""
        pending, self.pending = self.pending, 0
        if include_footers or not pending or self.pacer is None:
            return super().flush(include_footers)
        return asyncio.ensure_future(self._paced_flush(self.pacer, pending))

    async def _paced_flush(self, pacer: Pacer, pending: int) -> None:
        await pacer.take(pending, self)
        await super().flush()

    @classmethod
    def get_content(
        cls, abspath: str, start: int | None = None, end: int | None = None
    ) -> Generator[bytes, None, None]:
        """The bytes `start` to `end` of the file, in chunks of `CHUNK_BYTES`."""
        with open(abspath, "rb") as file:
            position = start or 0
            stop = os.fstat(file.fileno()).st_size if end is None else end
            while position < stop:
                chunk = os.pread(file.fileno(), min(CHUNK_BYTES, stop - position), position)
                if not chunk:
                    raise HTTPError(500, f"{abspath} shrank while being sent")
                position += len(chunk)
                yield chunk


def make_app(root: Path, rate: float) -> Application:
    """The store's application: files under `root`, each server K paced to `rate`."""
    pacers: dict[int, Pacer] = {}
    handler = (SERVER_PATH, PacedFileHandler, {"path": str(root), "pacers": pacers, "rate": rate})
    # Access logging off: a 404 or 416 would be a warning line on stderr per request.
    return Application([handler], log_function=lambda _: None)


async def serve(root: Path, rate: float, announce: Callable[[int], None]) -> None:
    """Serve `root` on a free port of 127.0.0.1, calling `announce(port)` once listening;
    runs until cancelled."""
    sockets = bind_sockets(0, HOST)
    server = HTTPServer(make_app(root, rate))
    server.add_sockets(sockets)
    announce(sockets[0].getsockname()[1])
    try:
        await asyncio.Event().wait()
    finally:
        server.stop()
