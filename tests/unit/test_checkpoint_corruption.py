"""Every corruption is caught by `verify` (one line, exit 2) and by `load` (an error)."""

import json
import os
import re

import pytest
from checkpoint_support import llama_like, write
from refusal import refused

import calibration
from calibration.checkpoint import verify
from calibration.checkpoint.format import BLOB_NAME, INDEX_NAME, read_index


def _edit_index(path, edit):
    document = json.loads((path / INDEX_NAME).read_text())
    edit(document)
    (path / INDEX_NAME).write_text(json.dumps(document))


def _tensor(document, position):
    return list(document["tensors"].values())[position]


def _truncate(path):
    os.truncate(path / BLOB_NAME, os.path.getsize(path / BLOB_NAME) - 4096)


def _extend(path):
    with open(path / BLOB_NAME, "ab") as blob:
        blob.write(bytes(4096))


def _flip_byte(path):
    entry = read_index(path).tensors[3]
    with open(path / BLOB_NAME, "r+b") as blob:
        blob.seek(entry.offset + entry.nbytes // 2)
        byte = blob.read(1)
        blob.seek(-1, os.SEEK_CUR)
        blob.write(bytes([byte[0] ^ 0x10]))


def _out_of_bounds(path):
    _edit_index(path, lambda doc: _tensor(doc, -1).update(offset=doc["total_bytes"]))


def _overlapping(path):
    _edit_index(path, lambda doc: _tensor(doc, 2).update(offset=_tensor(doc, 1)["offset"]))


def _misaligned(path):
    _edit_index(path, lambda doc: _tensor(doc, 1).update(offset=_tensor(doc, 1)["offset"] + 8))


def _bad_json(path):
    (path / INDEX_NAME).write_text('{"format": "thaw-checkpoint", "version": 1, ')


def _unknown_dtype(path):
    _edit_index(path, lambda doc: _tensor(doc, 0).update(dtype="float13"))


def _dtype_a_list(path):
    _edit_index(path, lambda doc: _tensor(doc, 0).update(dtype=["float16"]))


def _shape_mismatch(path):
    _edit_index(path, lambda doc: _tensor(doc, 0).update(shape=[7, 7]))


def _duplicate_name(path):
    text = (path / INDEX_NAME).read_text()
    first = text.index('"model.layers.0.input_layernorm.weight"')
    (path / INDEX_NAME).write_text(text.replace('"model.norm.weight"', text[first : first + 39]))


def _wrong_version(path):
    _edit_index(path, lambda doc: doc.update(version=99))


def _missing_blob(path):
    os.remove(path / BLOB_NAME)


def _blob_is_a_directory(path):
    os.remove(path / BLOB_NAME)
    os.mkdir(path / BLOB_NAME)


def _blob_is_a_fifo(path):
    os.remove(path / BLOB_NAME)
    os.mkfifo(path / BLOB_NAME)


def _index_is_a_fifo(path):
    os.remove(path / INDEX_NAME)
    os.mkfifo(path / INDEX_NAME)


def _index_nested_deeply(path):
    (path / INDEX_NAME).write_text("[" * 100_000 + "]" * 100_000)


def _index_not_utf8(path):
    (path / INDEX_NAME).write_bytes(b'{"format": "\xff"}')


def _huge_alignment(path):
    _edit_index(path, lambda doc: doc.update(alignment=2**40, total_bytes=2**40))


def _nan_in_index(path):
    text = (path / INDEX_NAME).read_text()
    (path / INDEX_NAME).write_text(text.replace('"alignment": 4096', '"alignment": NaN'))


CORRUPTIONS = {
    "truncated blob": (_truncate, "truncated"),
    "blob too long": (_extend, "too long"),
    "corrupted byte": (_flip_byte, "is corrupted (checksum)"),
    "offset out of bounds": (_out_of_bounds, "past the end"),
    "overlapping offsets": (_overlapping, "overlap"),
    "misaligned offset": (_misaligned, "not aligned"),
    "bad JSON": (_bad_json, "bad JSON"),
    "unknown dtype": (_unknown_dtype, "unknown dtype 'float13'"),
    "dtype a list": (_dtype_a_list, "unknown dtype ['float16']"),
    "shape mismatch": (_shape_mismatch, "does not match shape"),
    "duplicate name": (_duplicate_name, "duplicate key"),
    "wrong version": (_wrong_version, "unsupported format version 99"),
    "missing blob": (_missing_blob, "tensors.bin: no such file"),
    "blob is a directory": (_blob_is_a_directory, "tensors.bin: is a directory"),
    "blob is a FIFO": (_blob_is_a_fifo, "tensors.bin: not a regular file"),
    "index is a FIFO": (_index_is_a_fifo, "index.json: not a regular file"),
    "index nested deeply": (_index_nested_deeply, "nested too deeply"),
    "index not UTF-8": (_index_not_utf8, "index.json: not UTF-8 text"),
    "huge alignment": (_huge_alignment, "is not a power of two from 8 to"),
    "NaN in the index": (_nan_in_index, "NaN is not a JSON number"),
}


@pytest.fixture(params=list(CORRUPTIONS))
def corrupted(request, tmp_path):
    corrupt, reason = CORRUPTIONS[request.param]
    path = write(tmp_path, llama_like())
    corrupt(path)
    return path, reason


def test_verify_reports_each_corruption_in_one_line(corrupted, capsys):
    path, reason = corrupted
    refused(capsys, verify.main, [str(path)], str(path), reason, keeps=path)


@pytest.mark.parametrize("mode", ["direct", "buffered", "map"])
def test_load_refuses_each_corruption(corrupted, mode):
    path, reason = corrupted
    with pytest.raises(calibration.CheckpointError, match=re.escape(reason)):
        calibration.load(path, mode=mode)


def test_verify_passes_a_good_checkpoint(tmp_path, capsys):
    path = write(tmp_path, llama_like())
    assert verify.main([str(path)]) == 0
    assert "ok" in capsys.readouterr().out


def test_only_verify_catches_words_swapped_within_a_tensor(tmp_path):
    """The documented limit of the load-time sum: CRC-32 in `verify` covers it."""
    path = write(tmp_path, llama_like())
    entry = read_index(path).tensors[0]
    with open(path / BLOB_NAME, "r+b") as blob:
        blob.seek(entry.offset)
        words = blob.read(16)
        assert words[:8] != words[8:]
        blob.seek(entry.offset)
        blob.write(words[8:] + words[:8])
    calibration.load(path)
    with pytest.raises(calibration.CheckpointError, match="corrupted"):
        verify.verify(path)
