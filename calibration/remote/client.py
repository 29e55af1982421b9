"""`download`: a checkpoint directory from the store onto this machine's disk.

The index first (one GET), then the blob in ranged GETs of `RANGE_BYTES` over one
keep-alive connection, each range read straight into page-aligned buffers
(`calibration.checkpoint.buffers`) and written with O_DIRECT (no page-cache copy: a
download must not leave gigabytes of dirty pages for a later load to find warm, nor a
burst of write-back at the fsync). A ring of buffers of `PIECE_BYTES` takes turns, so
the disk writes one piece while the next arrives. The blob and the index
go into a hidden staging directory beside `dest`, which is synced, evicted from the page
cache and renamed into place (`thaw_kernel.publish`): `dest` is either the whole
checkpoint or absent, never a part of one.

Every size is checked against the index (each range's `Content-Range` and length): a
refused, failed or short response is a `DownloadError` naming the URL. The bytes are not
checksummed here: `calibration.checkpoint.reader.load` checks every tensor when it
reads the copy.
"""

import errno
import http.client
import os
import re
import time
import urllib.parse
import warnings
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from calibration.checkpoint.buffers import host_buffer
from calibration.checkpoint.direct_io import BLOCK, round_up
from calibration.checkpoint.format import BLOB_NAME, INDEX_NAME, Index, parse_index
from calibration.checkpoint.pagecache import make_cold
from calibration.checkpoint.reader import DirectIOFallback
from calibration.checkpoint.writer import KIND, check_destination
from thaw_kernel.bounds import INDEX_FILE_BYTES
from thaw_kernel.errors import InputError
from thaw_kernel.publish import staged_directory
from thaw_kernel.user_files import parse_json

RANGE_BYTES = 64 * 2**20  # per GET: a request's overhead is noise beside 64 MiB
# Each range is written in pieces as it arrives, so that only the last piece's write
# follows the network; a ring of four keeps a slow write from stalling the reads.
PIECE_BYTES = 8 * 2**20
RING = 4
TIMEOUT_S = 60.0  # of one socket operation: a store that stalls this long has failed
_CONTENT_RANGE = re.compile(r"bytes ([0-9]+)-([0-9]+)/([0-9]+)")


class DownloadError(InputError):
    """The store refused a request, failed, or sent the wrong bytes; names the URL."""


@dataclass(frozen=True)
class Download:
    """A finished download: the checkpoint's URL, the bytes received (index and blob),
    and the seconds from the first request to the checkpoint in place at `dest`."""

    url: str
    dest: Path
    bytes: int
    seconds: float

    @property
    def bytes_per_s(self) -> float:
        return self.bytes / self.seconds


def download(
    base_url: str,
    server: int,
    name: str,
    dest: Path,
    *,
    range_bytes: int = RANGE_BYTES,
    timeout_s: float = TIMEOUT_S,
) -> Download:
    """Fetch the checkpoint directory `name` through `/s{server}/{name}/` of the store at
    `base_url` (`http://HOST:PORT`) into `dest` (absent, empty, or a checkpoint thaw
    wrote, which it replaces)."""
    if isinstance(server, bool) or not isinstance(server, int) or server < 0:
        raise InputError(f"server: expected a non-negative integer, got {server!r}")
    if range_bytes < BLOCK or range_bytes % BLOCK:
        raise InputError(f"range_bytes: expected a positive multiple of {BLOCK}")
    host, port, prefix = _split(base_url, server, name)
    base_url = base_url.rstrip("/")  # errors name the URL as requested
    check_destination(dest)
    started = time.perf_counter()
    connection = http.client.HTTPConnection(host, port, timeout=timeout_s)
    try:
        index_url = f"{prefix}/{INDEX_NAME}"
        text = _get_index(connection, base_url, index_url)
        with staged_directory(dest, KIND) as staging:
            (staging / INDEX_NAME).write_bytes(text)
            index = _parse(text, base_url + index_url)
            blob = staging / BLOB_NAME
            _get_blob(connection, base_url, f"{prefix}/{BLOB_NAME}", blob, index, range_bytes)
            make_cold(str(blob))  # synced, and its pages (if any) dropped
    finally:
        connection.close()
    took = time.perf_counter() - started
    return Download(base_url + prefix, dest, len(text) + index.total_bytes, took)


def _split(base_url: str, server: int, name: str) -> tuple[str, int, str]:
    """The host, the port, and the path of the checkpoint's directory on the store."""
    parts = urllib.parse.urlsplit(base_url)
    if parts.scheme != "http" or not parts.hostname or parts.path not in ("", "/"):
        raise InputError(f"{base_url}: expected http://HOST:PORT")
    segments = name.split("/")
    if not name or name.startswith("/") or any(s in ("", ".", "..") for s in segments):
        raise InputError(f"{name!r}: expected a relative path of the store's, without '..'")
    try:
        port = parts.port or 80
    except ValueError:
        raise InputError(f"{base_url}: bad port") from None
    return parts.hostname, port, f"/s{server}/{urllib.parse.quote(name)}"


def _get_index(connection: http.client.HTTPConnection, base: str, path: str) -> bytes:
    response = _request(connection, base, path, {})
    url = base + path
    if response.status != 200:
        response.read()
        raise DownloadError(f"{url}: HTTP {response.status} {response.reason}")
    length = _length(response, url)
    if length > INDEX_FILE_BYTES:
        raise DownloadError(f"{url}: an index of {length} bytes (over {INDEX_FILE_BYTES})")
    text = _read(response, url, length)
    return text


def _parse(text: bytes, url: str) -> Index:
    try:
        return parse_index(parse_json(text.decode("utf-8")))
    except (ValueError, UnicodeDecodeError) as err:
        raise DownloadError(f"{url}: not a checkpoint index: {err}") from None


def _get_blob(
    connection: http.client.HTTPConnection,
    base: str,
    path: str,
    blob: Path,
    index: Index,
    range_bytes: int,
) -> None:
    """The blob's ranges, read piece by piece into a ring of aligned buffers, each piece
    written while the next arrives; the file is then cut to `total_bytes` (O_DIRECT
    writes whole blocks) and synced."""
    total, url = index.total_bytes, base + path
    piece = min(PIECE_BYTES, range_bytes, round_up(max(total, 1), BLOCK))
    # Not pre-faulted: the faults fall in the wait for the network, not before it.
    ring = [memoryview(host_buffer(piece, prefault=False).numpy()) for _ in range(RING)]
    writes: list[Future | None] = [None] * RING
    fd = _open_for_writing(blob)
    try:
        with ThreadPoolExecutor(1, thread_name_prefix="thaw-download") as writer:
            count = 0
            for start in range(0, total, range_bytes):
                length = min(range_bytes, total - start)
                response = _open_range(connection, base, path, start, length, total)
                for offset in range(start, start + length, piece):
                    size = min(piece, start + length - offset)
                    slot = count % RING
                    if writes[slot] is not None:
                        writes[slot].result()  # its buffer is free again
                    view = ring[slot]
                    _read_into(response, url, view[:size], offset)
                    padded = round_up(size, BLOCK)
                    view[size:padded] = bytes(padded - size)
                    writes[slot] = writer.submit(_write, fd, view[:padded], offset)
                    count += 1
            for write in writes:
                if write is not None:
                    write.result()
        os.ftruncate(fd, total)
        os.fsync(fd)
    except OSError as err:
        raise DownloadError(f"{url}: writing {blob}: {err.strerror or err}") from None
    finally:
        os.close(fd)


def _open_range(
    connection: http.client.HTTPConnection,
    base: str,
    path: str,
    start: int,
    length: int,
    total: int,
) -> http.client.HTTPResponse:
    """The response to a GET of bytes `start` .. `start + length` of a file of `total`
    bytes, its status and sizes checked."""
    url = base + path
    last = start + length - 1
    response = _request(connection, base, path, {"Range": f"bytes={start}-{last}"})
    whole = response.status == 200 and start == 0 and length == total
    if response.status != 206 and not whole:
        response.read()
        raise DownloadError(
            f"{url}: bytes {start}-{last}: HTTP {response.status} {response.reason}"
        )
    if response.status == 206:
        said = _CONTENT_RANGE.fullmatch(response.getheader("Content-Range") or "")
        if said is None or tuple(map(int, said.groups())) != (start, last, total):
            raise DownloadError(
                f"{url}: asked for bytes {start}-{last}/{total} (the index's size), got "
                f"Content-Range {response.getheader('Content-Range')!r}"
            )
    if _length(response, url) != length:
        raise DownloadError(f"{url}: bytes {start}-{last}: Content-Length is not {length}")
    return response


def _read_into(response: http.client.HTTPResponse, url: str, view: memoryview, offset: int) -> None:
    """Fill `view` from the response body (the file's bytes from `offset`)."""
    done = 0
    while done < len(view):
        got = _guarded(url, lambda done=done: response.readinto(view[done:]))
        if not got:
            raise DownloadError(f"{url}: short: the body ended at byte {offset + done} of the file")
        done += got


def _request(
    connection: http.client.HTTPConnection, base: str, path: str, headers: dict[str, str]
) -> http.client.HTTPResponse:
    def send() -> http.client.HTTPResponse:
        connection.request("GET", path, headers=headers)
        return connection.getresponse()

    return _guarded(base + path, send)


def _guarded(url: str, action):
    """`action()`, with a network failure as a `DownloadError` naming `url`."""
    try:
        return action()
    except (OSError, http.client.HTTPException) as err:
        what = err.strerror if isinstance(err, OSError) and err.strerror else repr(err)
        raise DownloadError(f"{url}: {what}") from None


def _length(response: http.client.HTTPResponse, url: str) -> int:
    value = response.getheader("Content-Length")
    if value is None or not value.isdigit():
        raise DownloadError(f"{url}: no Content-Length")
    return int(value)


def _read(response: http.client.HTTPResponse, url: str, length: int) -> bytes:
    data = _guarded(url, response.read)
    if len(data) != length:
        raise DownloadError(f"{url}: short: {len(data)} of {length} bytes")
    return data


def _open_for_writing(path: Path) -> int:
    """An O_DIRECT descriptor to write `path`, or a plain one, with a `DirectIOFallback`
    warning, where the filesystem refuses O_DIRECT (tmpfs)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    try:
        return os.open(path, flags | os.O_DIRECT, 0o644)
    except OSError as err:
        if err.errno != errno.EINVAL:
            raise
        warnings.warn(
            f"{path}: O_DIRECT refused ({err.strerror}); writing through the page cache",
            DirectIOFallback,
            stacklevel=4,
        )
        path.unlink(missing_ok=True)
        return os.open(path, flags, 0o644)


def _write(fd: int, view: memoryview, offset: int) -> None:
    done = 0
    while done < len(view):
        done += os.pwrite(fd, view[done:], offset + done)
