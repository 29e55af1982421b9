"""gzip-compressed traces (`.csv.gz`, as traces are often published) read as their CSV
does and are written compressed; a `.gz` that is not gzip is one line naming it."""

import gzip
import shutil
from pathlib import Path

import pytest
from refusal import refused

import traces
from thaw_kernel import seeds
from traces.cli import main

DATA = Path(__file__).parents[1] / "data" / "traces"
FORMATS = ["canonical.csv", "azure-llm-2023.csv", "azure-llm-2024.csv", "azure-functions-2021.csv"]
MODELS = ["m0", "m1", "m2"]


def _gzip(src: Path, dst: Path) -> Path:
    with src.open("rb") as plain, gzip.open(dst, "wb") as packed:
        shutil.copyfileobj(plain, packed)
    return dst


@pytest.mark.parametrize("name", FORMATS)
def test_a_gzip_trace_reads_as_its_csv(name, tmp_path):
    packed = _gzip(DATA / name, tmp_path / f"{name}.gz")
    plain = traces.read(DATA / name, MODELS, seeds.rng(0, "trace"))
    read = traces.read(packed, MODELS, seeds.rng(0, "trace"))
    assert read.format == plain.format
    assert read.frame.equals(plain.frame)


def test_convert_writes_gzip_that_reads_back(tmp_path):
    out = tmp_path / "out.csv.gz"
    assert main(["convert", str(DATA / "azure-llm-2023.csv"), "-o", str(out)]) == 0
    with gzip.open(out, "rt") as text:
        assert text.readline().strip() == "arrival_s,model,input_tokens,output_tokens"
    again = traces.read(out, ["opt-6.7b", "opt-13b", "opt-30b"], seeds.rng(0, "trace"))
    assert len(again.frame) == 4 and again.format == "canonical"


def test_a_gz_that_is_not_gzip_is_one_line(tmp_path, capsys):
    fake = tmp_path / "trace.csv.gz"
    fake.write_text("arrival_s,model,input_tokens,output_tokens\n0,m0,1,1\n")
    refused(capsys, main, ["stats", str(fake)], str(fake), "not a gzip file", keeps=tmp_path)
