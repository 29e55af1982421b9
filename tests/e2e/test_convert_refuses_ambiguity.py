"""`calibration.convert` converts exactly what the source says, or refuses in one line:
a sharded checkpoint's tensors must each be in the one shard its index names."""

import json
import os

import pytest
import torch
from refusal import refused as refused_in_one_line
from safetensors.torch import save_file

from calibration.checkpoint.convert import main as convert

INDEX = "model.safetensors.index.json"


def sharded(directory, shards, weight_map):
    directory.mkdir()
    for shard, tensors in shards.items():
        save_file(tensors, directory / shard)
    (directory / INDEX).write_text(json.dumps({"weight_map": weight_map}))
    return directory


def refused(capsys, tmp_path, src, reason):
    argv = [str(src), str(tmp_path / "out")]
    return refused_in_one_line(capsys, convert, argv, reason, keeps=tmp_path)


def test_a_tensor_in_two_shards_is_refused(tmp_path, capsys):
    src = sharded(
        tmp_path / "src",
        {"a.safetensors": {"w": torch.zeros(2)}, "b.safetensors": {"w": torch.ones(2)}},
        {"w": "b.safetensors", "v": "a.safetensors"},
    )
    refused(capsys, tmp_path, src, "is in this shard, but")


def test_a_tensor_the_weight_map_does_not_name_is_refused(tmp_path, capsys):
    src = sharded(
        tmp_path / "src",
        {"a.safetensors": {"w": torch.zeros(2), "stray": torch.ones(2)}},
        {"w": "a.safetensors"},
    )
    refused(capsys, tmp_path, src, "tensor 'stray' is not in")


def test_a_weight_map_entry_no_shard_holds_is_refused(tmp_path, capsys):
    src = sharded(
        tmp_path / "src",
        {"a.safetensors": {"w": torch.zeros(2)}},
        {"w": "a.safetensors", "ghost": "a.safetensors"},
    )
    refused(capsys, tmp_path, src, f"{INDEX}: 1 tensors missing, e.g. 'ghost'")


def test_the_same_tensor_twice_is_refused_even_where_the_map_agrees(tmp_path, capsys):
    src = sharded(
        tmp_path / "src",
        {"a.safetensors": {"w": torch.zeros(2)}, "b.safetensors": {"w": torch.ones(2)}},
        {"w": "a.safetensors", "x": "b.safetensors"},
    )
    err = refused(capsys, tmp_path, src, "tensor 'w'")
    assert "b.safetensors" in err


@pytest.mark.parametrize(
    "weight_map",
    [[], {}, {"w": 3}, {"w": None}, {"w": "../a.safetensors"}, {"w": "/etc/passwd"}, "x"],
)
def test_odd_weight_maps_are_refused(tmp_path, capsys, weight_map):
    src = sharded(tmp_path / "src", {"a.safetensors": {"w": torch.zeros(2)}}, weight_map)
    refused(capsys, tmp_path, src, INDEX)


def test_a_sparse_tensor_is_refused(tmp_path, capsys):
    src = tmp_path / "model.pt"
    torch.save({"w": torch.eye(3).to_sparse()}, src)
    refused(capsys, tmp_path, src, "tensor 'w' is not a dense tensor")


def test_a_refused_pickle_does_not_advise_running_its_code(tmp_path, capsys):
    src = tmp_path / "model.pt"
    torch.save({"w": torch.nn.Linear(2, 2)}, src)
    err = refused(capsys, tmp_path, src, "holds more than tensors")
    assert "weights_only" not in err and "\x1b" not in err


def test_a_fifo_source_is_refused_without_hanging(tmp_path, capsys):
    os.mkfifo(tmp_path / "model.pt")
    refused(capsys, tmp_path, tmp_path / "model.pt", "not a regular file")


def test_a_gigantic_alignment_is_refused_before_anything_is_written(tmp_path, capsys):
    src = tmp_path / "model.pt"
    torch.save({"w": torch.zeros(2)}, src)
    argv = [str(src), str(tmp_path / "out"), "--alignment", str(2**30)]
    refused_in_one_line(capsys, convert, argv, "--alignment", keeps=tmp_path)
