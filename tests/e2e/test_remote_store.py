"""The remote store and its client, for real: a tornado server on 127.0.0.1 in its own
process, real sockets, real checkpoints written with O_DIRECT into a temporary
directory on disk. Files are a few MB; rates are set so that a download takes about a
second. Times are asserted from below only (pacing never delivers B bytes in under
B / rate seconds); how much slower a shared machine makes them is not a property."""

import http.client
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch
from checkpoint_support import llama_like, same_bits
from refusal import refused

from calibration.checkpoint.format import BLOB_NAME, read_index
from calibration.checkpoint.pagecache import resident_fraction
from calibration.checkpoint.reader import load
from calibration.checkpoint.writer import write_checkpoint
from calibration.remote.client import DownloadError, download
from calibration.remote.command import main as store_main
from calibration.remote.running import StoreNotStarted, running_store
from calibration.remote.store import CHUNK_BYTES, Pacer
from thaw_kernel.errors import InputError

MiB = 2**20
RATE = 4 * MiB  # bytes/s per server: 4 MiB take a second


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    """A store's directory: a 1 MiB file of known bytes and two checkpoints."""
    directory = tmp_path_factory.mktemp("store")
    (directory / "data.bin").write_bytes(bytes(range(256)) * (MiB // 256))
    write_checkpoint(llama_like(), directory / "tiny")
    big = {"w": torch.arange(MiB, dtype=torch.int32), "b": torch.ones(5, dtype=torch.int8)}
    write_checkpoint(big, directory / "big", alignment=8)  # 4 MiB + 8 bytes: not whole blocks
    return directory


@pytest.fixture(scope="module")
def store(root) -> str:
    with running_store(root, RATE) as running:
        yield running.url


def get(url: str, path: str, headers: dict[str, str] | None = None):
    host, port = url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    connection.request("GET", path, headers=headers or {})
    response = connection.getresponse()
    body = response.read()
    connection.close()
    return response, body


def test_a_range_is_206_with_its_content_range(store, root):
    response, body = get(store, "/s0/data.bin", {"Range": "bytes=10-19"})
    assert response.status == 206
    assert response.getheader("Content-Range") == f"bytes 10-19/{MiB}"
    assert response.getheader("Accept-Ranges") == "bytes"
    assert body == (root / "data.bin").read_bytes()[10:20]
    assert response.getheader("Etag") is None  # no hashing of multi-GB files


def test_a_range_past_the_end_is_416_and_the_whole_file_is_200(store, root):
    response, body = get(store, "/s0/data.bin", {"Range": f"bytes={MiB}-"})
    assert response.status == 416 and body == b""
    assert response.getheader("Content-Range") == f"bytes */{MiB}"
    whole = (root / "data.bin").read_bytes()
    for headers in ({}, {"Range": "bytes=0-"}, {"Range": f"bytes=0-{MiB - 1}"}):
        response, body = get(store, "/s3/data.bin", headers)
        assert response.status == 200 and body == whole, headers
    response, _ = get(store, "/s0/missing.bin")
    assert response.status == 404
    response, _ = get(store, "/s0/../store/data.bin")
    assert response.status in (403, 404)
    response, _ = get(store, "/data.bin")  # no server: not served
    assert response.status == 404


def test_a_downloaded_checkpoint_loads_and_verifies(store, root, tmp_path):
    done = download(store, 0, "tiny", tmp_path / "copy" / "tiny", range_bytes=8 * 4096)
    assert done.dest == tmp_path / "copy" / "tiny"
    blob = done.dest / BLOB_NAME
    assert resident_fraction(str(blob)) == 0.0  # written with O_DIRECT, left cold
    assert blob.read_bytes() == (root / "tiny" / BLOB_NAME).read_bytes()
    assert done.bytes == blob.stat().st_size + (done.dest / "index.json").stat().st_size
    loaded = load(done.dest, mode="direct")  # every tensor's checksum checked
    original = llama_like()
    assert all(same_bits(loaded[name], tensor) for name, tensor in original.items())
    assert sorted(p.name for p in (tmp_path / "copy").iterdir()) == ["tiny"]  # no staging


def test_a_blob_of_partial_blocks_downloads_whole(store, root, tmp_path):
    done = download(store, 1, "big", tmp_path / "big", range_bytes=MiB)  # 5 ranges
    assert read_index(done.dest).total_bytes % 4096 != 0
    assert (done.dest / BLOB_NAME).read_bytes() == (root / "big" / BLOB_NAME).read_bytes()
    assert torch.equal(load(done.dest)["w"], torch.arange(MiB, dtype=torch.int32))
    again = download(store + "/", 1, "big", tmp_path / "big")  # replaces its earlier copy
    assert again.url == f"{store}/s1/big"
    assert load(again.dest)["b"].tolist() == [1] * 5


def test_a_download_takes_at_least_its_bytes_over_the_rate(store, tmp_path):
    done = download(store, 5, "big", tmp_path / "big")
    assert done.bytes > 4 * MiB
    assert done.seconds >= 0.95 * done.bytes / RATE  # chunk slots round down by < 1 MiB
    assert done.bytes_per_s <= RATE * 1.05


def timed_downloads(store: str, servers: list[int], directory: Path) -> list[float]:
    """Download `big` once per entry of `servers` at the same time; each one's seconds."""
    seconds: list[float] = [0.0] * len(servers)
    failures: list[BaseException] = []

    def fetch(number: int, server: int) -> None:
        try:
            seconds[number] = download(store, server, "big", directory / str(number)).seconds
        except BaseException as err:
            failures.append(err)

    threads = [threading.Thread(target=fetch, args=pair) for pair in enumerate(servers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures
    return seconds


def test_downloads_from_one_server_share_its_rate(store, tmp_path):
    seconds = timed_downloads(store, [7, 7], tmp_path)
    size = (tmp_path / "0" / BLOB_NAME).stat().st_size
    assert max(seconds) >= 0.95 * 2 * size / RATE  # two files through one link


def test_servers_are_paced_each_on_its_own(store, tmp_path):
    seconds = timed_downloads(store, [8, 9], tmp_path)
    size = (tmp_path / "0" / BLOB_NAME).stat().st_size
    assert min(seconds) >= 0.95 * size / RATE  # each at most its own server's rate
    for number in (0, 1):
        assert load(tmp_path / str(number))["b"].tolist() == [1] * 5


def test_a_pacer_books_slots_one_after_another_and_servers_do_not_share():
    rate = 1000.0
    one, other = Pacer(rate), Pacer(rate)
    assert one.reserve(10.0, 500, "a") == 10.5
    assert one.reserve(10.0, 500, "b") == 11.0  # the second response waits its turn
    assert other.reserve(10.0, 500, "c") == 10.5  # another server's link is free
    assert one.reserve(11.005, 1000, "b") == 12.0  # a response's turnaround is not idle
    assert one.reserve(12.005, 1000, "a") == 13.005  # but another's start is no earlier
    assert one.reserve(20.0, 1000, "a") == 21.0  # a slot nobody used is not saved up
    assert MiB <= CHUNK_BYTES


def test_a_missing_checkpoint_is_an_error_naming_the_url_and_writes_nothing(store, tmp_path):
    with pytest.raises(DownloadError, match=r"http://127\.0\.0\.1:\d+/s0/nothing/index\.json.*404"):
        download(store, 0, "nothing", tmp_path / "out" / "nothing")
    assert not (tmp_path / "out").exists()


def test_a_short_blob_is_an_error_and_leaves_nothing_half_written(tmp_path):
    root = tmp_path / "root"
    write_checkpoint(llama_like(), root / "cut")
    blob = root / "cut" / BLOB_NAME
    os.truncate(blob, blob.stat().st_size - 4096)
    short = pytest.raises(DownloadError, match=r"/s2/cut/tensors\.bin: .*bytes 0-")
    with running_store(root, 100 * MiB) as running, short:
        download(running.url, 2, "cut", tmp_path / "dest", range_bytes=4096 * 4)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["root"]


def test_bad_names_and_destinations_are_refused(store, tmp_path):
    for name in ("../tiny", "/tiny", "", "a//b"):
        with pytest.raises(InputError, match="relative path"):
            download(store, 0, name, tmp_path / "x")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    with pytest.raises(InputError, match="not a thaw checkpoint directory"):
        download(store, 0, "tiny", mine)
    assert (mine / "notes.txt").read_text() == "keep"


def store_children() -> list[int]:
    """Our own child processes running the store."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            command = (entry / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if parent == os.getpid() and b"calibration.remote" in command:
            found.append(int(entry.name))
    return found


def test_the_store_process_is_gone_when_the_block_exits(tmp_path):
    before = set(store_children())
    with pytest.raises(KeyError), running_store(tmp_path, 1e6) as running:
        port = int(running.url.rsplit(":", 1)[1])
        assert set(store_children()) - before
        raise KeyError("the block failed")
    assert set(store_children()) == before
    with pytest.raises(ConnectionRefusedError):
        http.client.HTTPConnection("127.0.0.1", port, timeout=5).connect()


def test_a_store_that_cannot_start_says_why(tmp_path):
    before = set(store_children())
    fails = pytest.raises(StoreNotStarted, match=r"--root .*missing: no such directory")
    with fails, running_store(tmp_path / "missing", 1e6):
        pass
    assert set(store_children()) == before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rate", "1e6"], "--root"),
        (["--root", "."], "--rate"),
        (["--root", ".", "--rate", "fast"], "'fast'"),
        (["--root", ".", "--rate", "0"], "is not a rate"),
        (["--root", ".", "--rate", "nan"], "is not a rate"),
        (["--root", "missing", "--rate", "1e6"], "--root missing: no such directory"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(tmp_path, capsys, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    refused(capsys, store_main, args, message, keeps=tmp_path)


def test_the_command_prints_its_port_and_serves_until_terminated(root):
    started = time.monotonic()
    with subprocess.Popen(
        [sys.executable, "-m", "calibration.remote", "--root", str(root), "--rate", "10MB/s"],
        stdout=subprocess.PIPE,
        text=True,
    ) as process:
        word, port = process.stdout.readline().split()
        assert word == "port" and 1024 <= int(port) < 65536
        response, body = get(f"http://127.0.0.1:{port}", "/s0/data.bin", {"Range": "bytes=0-3"})
        assert response.status == 206 and body == bytes(range(4))
        process.terminate()
        process.wait(timeout=30)
    assert time.monotonic() > started
