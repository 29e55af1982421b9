"""The checkpoint format and its writer: ordering, alignment, round trips, atomic writes."""

import json
import os
import random
import subprocess
import sys

import pytest
import torch
from checkpoint_support import every_dtype, llama_like, same_bits, write
from refusal import assert_one_line, refused
from safetensors.torch import save_file

import calibration
from calibration.checkpoint import convert
from calibration.checkpoint.format import BLOB_NAME, INDEX_NAME, read_index
from calibration.checkpoint.ordering import forward_pass_order
from thaw_kernel import publish


def test_forward_pass_order_is_natural_not_alphabetical():
    names = [
        "lm_head.weight",
        "model.norm.weight",
        "model.layers.10.mlp.weight",
        "model.layers.2.mlp.weight",
        "model.layers.1.attn.weight",
        "model.embed_tokens.weight",
        "model.layers.0.attn.weight",
    ]
    random.Random(0).shuffle(names)
    assert forward_pass_order(names) == [
        "model.embed_tokens.weight",
        "model.layers.0.attn.weight",
        "model.layers.1.attn.weight",
        "model.layers.2.mlp.weight",
        "model.layers.10.mlp.weight",
        "model.norm.weight",
        "lm_head.weight",
    ]


def test_blob_is_in_forward_pass_order_with_aligned_zero_padded_tensors(tmp_path):
    tensors = llama_like(layers=12)
    path = write(tmp_path, dict(reversed(tensors.items())))
    index = read_index(path)
    names = [entry.name for entry in index.tensors]
    assert names == forward_pass_order(list(tensors))
    assert names[0] == "model.embed_tokens.weight" and names[-1] == "lm_head.weight"
    assert names.index("model.layers.2.mlp.gate_proj.weight") < names.index(
        "model.layers.10.input_layernorm.weight"
    )
    blob = (path / BLOB_NAME).read_bytes()
    assert len(blob) == index.total_bytes and index.total_bytes % 4096 == 0
    end = 0
    for entry in index.tensors:
        assert entry.offset % 4096 == 0
        assert blob[end : entry.offset] == bytes(entry.offset - end)  # gaps are zeros
        end = entry.offset + entry.nbytes
    assert blob[end:] == bytes(len(blob) - end)


@pytest.mark.parametrize("alignment", [64, 4096, 65536])
def test_alignment_is_configurable(tmp_path, alignment):
    tensors = llama_like(layers=2)
    path = write(tmp_path, tensors, alignment=alignment)
    index = read_index(path)
    assert index.alignment == alignment
    assert all(entry.offset % alignment == 0 for entry in index.tensors)
    loaded = calibration.load(path, mode="buffered")
    assert all(same_bits(loaded[name], tensors[name]) for name in tensors)


@pytest.mark.parametrize("mode", ["direct", "buffered", "map"])
def test_every_dtype_round_trips_bit_identical(tmp_path, mode):
    tensors = every_dtype()
    assert {"float32", "float16", "bfloat16", "int8"} <= {name.split(".")[0] for name in tensors}
    path = write(tmp_path, tensors)
    loaded = calibration.load(path, mode=mode, threads=3, chunk_bytes=4096)
    assert set(loaded) == set(tensors)
    for name, tensor in tensors.items():
        assert same_bits(loaded[name], tensor), name


def test_tensors_are_views_into_one_buffer(tmp_path):
    loaded = calibration.load(write(tmp_path, llama_like()))
    storages = {tensor.untyped_storage().data_ptr() for tensor in loaded.values()}
    assert len(storages) == 1


def test_an_injected_failure_leaves_nothing_that_looks_valid(tmp_path, monkeypatch):
    def fail(path):
        raise OSError(5, "injected I/O error")

    monkeypatch.setattr(publish, "fsync_directory", fail)
    with pytest.raises(OSError, match="injected"):
        write(tmp_path, llama_like())
    assert os.listdir(tmp_path) == []


def test_a_failed_rewrite_keeps_the_old_checkpoint(tmp_path, monkeypatch):
    old = llama_like(layers=1)
    path = write(tmp_path, old)
    monkeypatch.setattr(publish, "publish_directory", lambda staging, dst: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        write(tmp_path, llama_like(layers=4))
    assert os.listdir(tmp_path) == ["ckpt"]
    loaded = calibration.load(path)
    assert all(same_bits(loaded[name], old[name]) for name in old)


def test_a_rewrite_replaces_a_checkpoint_but_nothing_else(tmp_path):
    path = write(tmp_path, llama_like(layers=1))
    write(tmp_path, llama_like(layers=2))
    assert len(calibration.load(path)) == len(llama_like(layers=2))
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "index.json").write_text("{}")  # looks like one: is not ours
    (tmp_path / "mine" / "tensors.bin").write_bytes(b"precious")
    with pytest.raises(calibration.CheckpointError, match="not a thaw checkpoint"):
        write(tmp_path, llama_like(), name="mine")
    assert (tmp_path / "mine" / "tensors.bin").read_bytes() == b"precious"
    (path / "notes.txt").write_text("added by the user")
    with pytest.raises(calibration.CheckpointError, match="not a thaw checkpoint"):
        write(tmp_path, llama_like(), name="ckpt")
    assert (path / "notes.txt").exists()


def _sharded(directory, tensors):
    directory.mkdir()
    names = list(tensors)
    shards = {"a.safetensors": names[: len(names) // 2], "b.safetensors": names[len(names) // 2 :]}
    for shard, members in shards.items():
        save_file({name: tensors[name] for name in members}, directory / shard)
    weight_map = {name: shard for shard, members in shards.items() for name in members}
    (directory / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))


@pytest.mark.parametrize("source", ["safetensors", "sharded", "state_dict"])
def test_convert_reads_every_source_kind(tmp_path, source, capsys):
    tensors = llama_like()
    src = tmp_path / "src"
    if source == "safetensors":
        src = tmp_path / "model.safetensors"
        save_file(tensors, src)
    elif source == "sharded":
        _sharded(src, tensors)
    else:
        src = tmp_path / "model.pt"
        torch.save(tensors, src)
    assert convert.main([str(src), str(tmp_path / "out")]) == 0
    assert "tensors" in capsys.readouterr().out
    loaded = calibration.load(tmp_path / "out")
    assert all(same_bits(loaded[name], tensors[name]) for name in tensors)


class _NotATensor:
    pass


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("garbage.pt", b"not a pickle at all", "not a loadable PyTorch state dict"),
        ("code.pt", None, "not a loadable PyTorch state dict"),
        ("list.pt", [torch.zeros(2)], "not a state dict"),
        ("bad.safetensors", b"\xff" * 64, "not a readable safetensors file"),
        ("missing.pt", False, "no such file"),
    ],
)
def test_convert_refuses_bad_sources_in_one_line(tmp_path, capsys, name, content, reason):
    src = tmp_path / name
    if isinstance(content, bytes):
        src.write_bytes(content)
    elif content is None:
        torch.save({"w": _NotATensor()}, src)  # weights_only=True must refuse to unpickle it
    elif content is not False:
        torch.save(content, src)
    argv = [str(src), str(tmp_path / "out")]
    refused(capsys, convert.main, argv, str(src), reason, keeps=tmp_path)


def test_convert_cli_end_to_end(tmp_path):
    src = tmp_path / "model.safetensors"
    save_file(llama_like(), src)
    out = tmp_path / "out"
    run = [sys.executable, "-m", "calibration.convert", str(src), str(out)]
    assert subprocess.run(run, capture_output=True, text=True, check=False).returncode == 0
    verify = [sys.executable, "-m", "calibration.verify", str(out)]
    result = subprocess.run(verify, capture_output=True, text=True, check=False)
    assert result.returncode == 0 and "ok" in result.stdout and result.stderr == ""
    (out / INDEX_NAME).write_text("{")
    result = subprocess.run(verify, capture_output=True, text=True, check=False)
    assert_one_line(result.returncode, result.stdout, result.stderr, "bad JSON")


def test_non_contiguous_and_shared_tensors_are_written_as_their_values(tmp_path):
    base = llama_like()["model.embed_tokens.weight"]
    tensors = {"model.embed_tokens.weight": base, "lm_head.weight": base, "t.weight": base.T}
    loaded = calibration.load(write(tmp_path, tensors))
    assert all(same_bits(loaded[name], tensors[name].contiguous()) for name in tensors)


def test_a_bad_alignment_is_refused(tmp_path, capsys):
    with pytest.raises(ValueError, match="power of two"):
        write(tmp_path, llama_like(), alignment=3000)
    src = tmp_path / "model.safetensors"
    save_file(llama_like(), src)
    argv = [str(src), str(tmp_path / "out"), "--alignment", "12"]
    refused(capsys, convert.main, argv, "--alignment", keeps=tmp_path)
