"""The reader: O_DIRECT and its fallback, mode choice, buffer reuse, the staged GPU path."""

import errno
import os
import tempfile
import warnings
from pathlib import Path

import pytest
import torch
from checkpoint_support import DTYPES, every_dtype, llama_like, random_tensor, same_bits, write
from hypothesis import given, settings
from hypothesis import strategies as st

import calibration
from calibration.checkpoint.buffers import host_buffer
from calibration.checkpoint.direct_io import open_direct
from calibration.checkpoint.format import BLOB_NAME, read_index
from calibration.checkpoint.pagecache import evict, resident_fraction
from calibration.checkpoint.plan import plan_regions
from calibration.checkpoint.reader import MASK64, choose_direct, choose_mode
from calibration.checkpoint.staging import _Copies, stream_staged

SHM = Path("/dev/shm")


def _direct_supported(directory: Path) -> bool:
    probe = directory / "probe"
    probe.write_bytes(bytes(4096))
    fd, _ = open_direct(str(probe))
    if fd is not None:
        os.close(fd)
    probe.unlink()
    return fd is not None


def test_direct_reads_on_a_real_disk_need_no_fallback(tmp_path):
    if not _direct_supported(tmp_path):
        pytest.skip(f"{tmp_path} refuses O_DIRECT; the fallback test covers this filesystem")
    tensors = llama_like()
    path = write(tmp_path, tensors)
    with warnings.catch_warnings():
        warnings.simplefilter("error", calibration.DirectIOFallback)
        loaded = calibration.load(path, mode="direct", threads=2, chunk_bytes=8192)
    assert all(same_bits(loaded[name], tensors[name]) for name in tensors)
    # O_DIRECT bypasses the page cache: a direct load of an evicted file leaves it uncached.
    evict(str(path / BLOB_NAME))
    calibration.load(path, mode="direct")
    assert resident_fraction(str(path / BLOB_NAME)) < 0.1


@pytest.mark.skipif(not SHM.is_dir(), reason="no /dev/shm tmpfs here")
def test_refused_o_direct_falls_back_to_the_page_cache_and_says_so(monkeypatch):
    """On a tmpfs. Before Linux 6.6 tmpfs refused O_DIRECT (EINVAL), as some overlays still
    do; where this one accepts it, the same refusal is injected into `os.open`."""
    tensors = llama_like()
    directory = Path(os.path.realpath(SHM)) / f"thaw-test-{os.getpid()}"
    try:
        path = write(directory, tensors)
        if _direct_supported(directory):
            monkeypatch.setattr(os, "open", _refusing_direct(os.open))
        with pytest.warns(calibration.DirectIOFallback, match="O_DIRECT refused"):
            loaded = calibration.load(path, mode="direct")
        assert all(same_bits(loaded[name], tensors[name]) for name in tensors)
    finally:
        monkeypatch.undo()
        for item in sorted(directory.rglob("*"), reverse=True):
            item.rmdir() if item.is_dir() else item.unlink()
        directory.rmdir()


def _refusing_direct(real_open):
    def refusing_open(path, flags, *args, **kwargs):
        if flags & os.O_DIRECT:
            raise OSError(errno.EINVAL, os.strerror(errno.EINVAL), path)
        return real_open(path, flags, *args, **kwargs)

    return refusing_open


def test_auto_mode_reads_cached_files_through_the_cache_and_cold_ones_directly(tmp_path):
    path = write(tmp_path, llama_like(layers=8, hidden=128))
    blob = path / BLOB_NAME
    blob.read_bytes()
    assert resident_fraction(str(blob)) == 1.0
    assert choose_direct(blob, "auto") is False
    assert choose_mode(blob, "auto", torch.device("cpu")) == "map"
    assert choose_mode(blob, "auto", torch.device("cuda")) == "buffered"
    evict(str(blob))
    assert resident_fraction(str(blob)) < 0.1
    assert choose_direct(blob, "auto") is True
    assert choose_mode(blob, "auto", torch.device("cpu")) == "direct"
    blob.read_bytes()
    fd = os.open(blob, os.O_RDONLY)
    os.posix_fadvise(fd, blob.stat().st_size // 2, 0, os.POSIX_FADV_DONTNEED)  # second half
    os.close(fd)
    exact, sampled = resident_fraction(str(blob)), resident_fraction(str(blob), samples=32)
    assert 0.4 < exact < 0.6 and abs(sampled - exact) < 0.1
    with pytest.raises(ValueError, match="mode must be"):
        choose_direct(blob, "fast")
    with pytest.raises(ValueError, match="for the CPU"):
        choose_mode(blob, "map", torch.device("cuda"))


def test_a_reused_buffer_receives_the_tensors_whenever_the_blob_is_read(tmp_path):
    first, second = llama_like(layers=2), every_dtype()
    path_a, path_b = write(tmp_path, first, "a"), write(tmp_path, second, "b")
    size = max(calibration.buffer_bytes(path_a), calibration.buffer_bytes(path_b))
    out = host_buffer(size)
    for path, tensors, mode in ((path_a, first, "buffered"), (path_b, second, "direct")):
        loaded = calibration.load(path, mode=mode, out=out)
        assert all(same_bits(loaded[name], tensors[name]) for name in tensors)
        assert all(t.untyped_storage().data_ptr() == out.data_ptr() for t in loaded.values())


def test_auto_maps_a_cached_file_on_the_cpu_and_leaves_out_alone(tmp_path):
    tensors = llama_like()
    path = write(tmp_path, tensors)
    (path / BLOB_NAME).read_bytes()
    out = host_buffer(calibration.buffer_bytes(path))
    out.fill_(0xAB)
    loaded = calibration.load(path, out=out)
    assert all(same_bits(loaded[name], tensors[name]) for name in tensors)
    assert {t.untyped_storage().data_ptr() for t in loaded.values()} != {out.data_ptr()}
    assert bool((out == 0xAB).all())
    del loaded  # unmapped, so that its pages can be evicted
    evict(str(path / BLOB_NAME))
    loaded = calibration.load(path, out=out)  # cold: read into `out`
    assert all(t.untyped_storage().data_ptr() == out.data_ptr() for t in loaded.values())


def test_a_mapped_load_is_bit_identical_views_of_one_mapping(tmp_path):
    tensors = every_dtype() | llama_like()
    path = write(tmp_path, tensors)
    loaded = calibration.load(path, mode="map", threads=3, chunk_bytes=4096)
    assert set(loaded) == set(tensors)
    assert all(same_bits(loaded[name], tensors[name]) for name in tensors)
    assert len({tensor.untyped_storage().data_ptr() for tensor in loaded.values()}) == 1


def test_an_empty_blob_maps(tmp_path):
    path = write(tmp_path, {"empty.weight": torch.empty((0, 3), dtype=torch.float16)})
    assert read_index(path).total_bytes == 0
    assert calibration.load(path, mode="map")["empty.weight"].shape == (0, 3)


def test_writes_to_mapped_tensors_never_reach_the_file(tmp_path):
    tensors = llama_like()
    path = write(tmp_path, tensors)
    before = (path / BLOB_NAME).read_bytes()
    loaded = calibration.load(path, mode="map")
    loaded["lm_head.weight"].fill_(1.0)
    assert (path / BLOB_NAME).read_bytes() == before
    assert all(same_bits(t, tensors[n]) for n, t in calibration.load(path, mode="map").items())


def test_mapped_tensors_survive_the_checkpoint_being_rewritten(tmp_path):
    """The writer renames a new checkpoint into place: the mapped old blob stays intact."""
    old = llama_like(layers=2)
    path = write(tmp_path, old)
    loaded = calibration.load(path, mode="map")
    write(tmp_path, llama_like(layers=2, hidden=32))
    assert all(same_bits(loaded[name], old[name]) for name in old)


@pytest.mark.parametrize(
    ("make_out", "problem"),
    [
        (lambda size: host_buffer(size - 4096), "at least"),
        (lambda size: torch.zeros(size, dtype=torch.float32), "uint8"),
        (lambda size: host_buffer(size + 4096)[1:], "aligned"),
    ],
)
def test_an_unfit_buffer_is_refused(tmp_path, make_out, problem):
    path = write(tmp_path, llama_like())
    with pytest.raises(ValueError, match=problem):
        calibration.load(path, out=make_out(calibration.buffer_bytes(path)))


def test_regions_cover_every_summed_byte_exactly_once(tmp_path):
    index = read_index(write(tmp_path, every_dtype(), alignment=64))
    for region_bytes in (4096, 8192, 1 << 20):
        covered = {}
        regions = plan_regions(index, region_bytes)
        assert regions[-1].offset + regions[-1].length == index.total_bytes
        for region in regions:
            for position, start, end in region.pieces:
                assert region.offset <= start < end <= region.offset + region.length
                covered[position] = covered.get(position, 0) + end - start
        for position, entry in enumerate(index.tensors):
            assert covered.get(position, 0) == entry.summed_bytes


@pytest.mark.parametrize(("threads", "depth"), [(1, 1), (3, 2), (2, 8)])
def test_the_staged_pipeline_streams_through_a_small_ring(tmp_path, threads, depth):
    """The GPU path's ring, driven with a CPU destination: more readers than slabs waits."""
    path = write(tmp_path, llama_like(layers=6, hidden=96))
    blob, index = path / BLOB_NAME, read_index(path)
    dest = host_buffer(index.total_bytes)
    fds = [os.open(blob, os.O_RDONLY) for _ in range(threads)]
    try:
        partials = stream_staged(blob, dest, index, fds, 4096, slab_bytes=16384, depth=depth)
    finally:
        for fd in fds:
            os.close(fd)
    assert bytes(dest.numpy()[: index.total_bytes]) == blob.read_bytes()
    for position, entry in enumerate(index.tensors):
        total = sum(sums.get(position, 0) for sums in partials)
        assert total & MASK64 == entry.sum64


def test_a_reader_error_stops_the_staged_pipeline(tmp_path):
    path = write(tmp_path, llama_like(layers=6, hidden=96))
    blob, index = path / BLOB_NAME, read_index(path)
    fds = [os.open(blob, os.O_RDONLY) for _ in range(2)]
    os.truncate(blob, index.total_bytes // 2)  # shrinks under the reader's feet
    try:
        with pytest.raises(calibration.CheckpointError, match="while being read"):
            stream_staged(blob, host_buffer(index.total_bytes), index, fds, 4096, 16384, 2)
    finally:
        for fd in fds:
            os.close(fd)


class _FakeEvent:
    def __init__(self, done: bool) -> None:
        self.done = done
        self.waited = False

    def query(self) -> bool:
        return self.done

    def synchronize(self) -> None:
        self.waited = self.done = True


def test_slabs_return_only_once_their_copy_event_has_fired():
    """The GPU recycling rule, with stand-in events: done copies free their slabs in
    order; a copier that would leave the readers without a slab waits for the oldest."""
    copies = _Copies(torch.empty(0))
    events = [_FakeEvent(True), _FakeEvent(False), _FakeEvent(True)]
    copies.pending.extend(zip(events, ["a", "b", "c"], strict=True))
    assert copies.finished(wait_for_one=False) == ["a"]
    assert not events[1].waited
    assert copies.finished(wait_for_one=True) == ["b", "c"]
    assert events[1].waited
    assert copies.finished(wait_for_one=True) == []


@pytest.mark.cuda
@pytest.mark.parametrize("mode", ["direct", "buffered"])
def test_cuda_load_is_bit_identical(tmp_path, mode):
    tensors = every_dtype() | llama_like()
    path = write(tmp_path, tensors)
    loaded = calibration.load(path, "cuda", mode=mode, slab_bytes=16384, ring_depth=3)
    assert all(tensor.is_cuda for tensor in loaded.values())
    assert all(same_bits(loaded[name], tensors[name]) for name in tensors)


@pytest.mark.cuda
def test_cuda_load_reuses_a_device_buffer_and_catches_corruption(tmp_path):
    tensors = llama_like()
    path = write(tmp_path, tensors)
    out = torch.empty(calibration.buffer_bytes(path), dtype=torch.uint8, device="cuda")
    loaded = calibration.load(path, "cuda", out=out)
    assert all(same_bits(loaded[name], tensors[name]) for name in tensors)
    entry = read_index(path).tensors[1]
    with open(path / BLOB_NAME, "r+b") as blob:
        blob.seek(entry.offset)
        blob.write(b"\xff")
    with pytest.raises(calibration.CheckpointError, match="corrupted"):
        calibration.load(path, "cuda", out=out)


@settings(max_examples=25, deadline=None)
@given(
    specs=st.lists(
        st.tuples(st.sampled_from(DTYPES), st.lists(st.integers(0, 40), max_size=3)),
        min_size=1,
        max_size=6,
    ),
    alignment=st.sampled_from([8, 64, 512, 4096]),
    chunk_kib=st.sampled_from([4, 8, 64]),
    threads=st.integers(1, 3),
    mode=st.sampled_from(["direct", "buffered", "map"]),
)
def test_any_checkpoint_round_trips_through_any_geometry(
    specs, alignment, chunk_kib, threads, mode
):
    tensors = {
        f"model.layers.{i}.weight": random_tensor(tuple(shape), dtype, i)
        for i, (dtype, shape) in enumerate(specs)
    }
    with tempfile.TemporaryDirectory() as directory:
        path = write(Path(directory), tensors, alignment=alignment)
        loaded = calibration.load(path, mode=mode, threads=threads, chunk_bytes=chunk_kib * 1024)
        assert all(same_bits(loaded[name], tensors[name]) for name in tensors)
