"""Every command that writes a directory replaces only a directory thaw itself wrote and
left unchanged (or an empty one): one that merely looks like an earlier output, or an
output the user added a file to, is refused in one line and left exactly as it was."""

import json
import os
import stat

import pytest
from refusal import refused

from analysis.cli import main as analysis
from calibration.checkpoint.convert import main as convert
from sim.runner.cli import main as sim
from thaw_kernel.publish import MARKER
from traces.cli import main as traces

RUN = ["run", "--max-requests", "10", "--quiet", "--out"]


def not_ours(what):
    return f"exists and is not a thaw {what} directory"


@pytest.mark.parametrize("lookalike", ["summary.json", "config.toml", MARKER])
def test_run_refuses_a_directory_that_merely_looks_like_a_run(tmp_path, capsys, lookalike):
    out = tmp_path / "mine"
    out.mkdir()
    (out / lookalike).write_text('{"kind": "report", "files": []}')
    (out / "thesis.tex").write_text("precious")
    refused(capsys, sim, [*RUN, str(out)], not_ours("run"), keeps=out)


def test_run_replaces_its_own_output_but_not_once_the_user_added_a_file(tmp_path, capsys):
    out = tmp_path / "r"
    assert sim([*RUN, str(out)]) == 0
    assert sim([*RUN, str(out), "--seed", "1"]) == 0  # ours, unchanged: replaced
    (out / "notes.txt").write_text("mine now")
    refused(capsys, sim, [*RUN, str(out)], not_ours("run"), keeps=out)


def test_an_empty_directory_is_a_fine_output(tmp_path):
    out = tmp_path / "empty"
    out.mkdir()
    assert sim([*RUN, str(out)]) == 0
    assert (out / "summary.json").is_file()


def test_report_refuses_a_directory_holding_a_report_md_of_the_users(tmp_path, capsys):
    assert sim([*RUN, str(tmp_path / "r")]) == 0
    out = tmp_path / "writing"
    out.mkdir()
    (out / "report.md").write_text("my own report")
    (out / "figure.png").write_bytes(b"mine")
    refused(capsys, analysis, ["report", str(tmp_path / "r"), "-o", str(out)],
            not_ours("report"), keeps=out)  # fmt: skip


def test_convert_refuses_a_lookalike_checkpoint(tmp_path, capsys):
    import torch

    src = tmp_path / "model.pt"
    torch.save({"w": torch.ones(4)}, src)
    out = tmp_path / "ckpt"
    out.mkdir()
    (out / "index.json").write_text("{}")
    (out / "tensors.bin").write_bytes(b"precious")
    refused(capsys, convert, [str(src), str(out)], not_ours("checkpoint"), keeps=out)


def test_sweep_refuses_a_directory_holding_the_users_sweep_file(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "study"
    out.mkdir()
    (out / "sweep.toml").write_text("# my sweep, with comments\nseeds = 1\n")
    argv = ["sweep", "--seeds", "1", "--out", str(out), "--quiet"]
    refused(capsys, sim, argv, not_ours("sweep"), keeps=out)


def test_a_failed_run_leaves_no_directory_it_created(tmp_path, capsys, monkeypatch):
    def fail(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("pandas.DataFrame.to_parquet", fail)
    assert sim([*RUN, str(tmp_path / "deep" / "er" / "run")]) == 2
    assert "No space left on device" in capsys.readouterr().err
    assert os.listdir(tmp_path) == []


def test_published_files_and_directories_take_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        assert sim([*RUN, str(tmp_path / "r")]) == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "r").stat().st_mode) == 0o750
    assert stat.S_IMODE((tmp_path / "r" / "summary.json").stat().st_mode) == 0o640


@pytest.mark.parametrize("out", ["FILE/run", "/proc/no-such-process/deep/run"])
def test_an_out_that_cannot_be_created_is_refused_before_the_run(
    tmp_path, capsys, monkeypatch, out
):
    (tmp_path / "file").write_text("not a directory")

    def simulated(*args, **kwargs):
        raise AssertionError("the run started before --out was checked")

    monkeypatch.setattr("sim.runner.cli.simulate", simulated)
    out = out.replace("FILE", str(tmp_path / "file"))
    refused(capsys, sim, [*RUN, out], f"{out}: cannot be created", keeps=tmp_path)


def test_report_refuses_a_summary_of_an_unknown_schema_version(tmp_path, capsys):
    run = tmp_path / "r"
    assert sim([*RUN, str(run)]) == 0
    summary = json.loads((run / "summary.json").read_text())
    (run / "summary.json").write_text(json.dumps({**summary, "schema_version": 99}))
    argv = ["report", str(run), "-o", str(tmp_path / "report")]
    refused(capsys, analysis, argv, "schema_version 99", keeps=tmp_path)


@pytest.mark.parametrize(
    ("main", "argv", "target"),
    [
        (sim, [*RUN, "OUT"], "sim.runner.cli.simulate"),
        (analysis, ["report", "RUN", "-o", "OUT"], "analysis.cli.write_report"),
        (convert, ["SRC", "OUT"], "calibration.checkpoint.convert.write_checkpoint"),
        (
            sim,
            ["sweep", "--seeds", "1", "--jobs", "1", "--quiet", "--out", "OUT"],
            "sim.runner.cli.run_sweep",
        ),
        (traces, ["convert", "TRACE", "-o", "CSV"], "traces.cli.write_canonical"),
    ],
)
def test_ctrl_c_is_one_line_and_exit_130_and_writes_nothing(
    tmp_path, capsys, monkeypatch, main, argv, target
):
    import torch

    assert sim([*RUN, str(tmp_path / "run")]) == 0
    torch.save({"w": torch.ones(4)}, tmp_path / "model.pt")
    capsys.readouterr()

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(target, interrupted)
    (tmp_path / "t.csv").write_text("arrival_s,model,input_tokens,output_tokens\n0,opt-6.7b,1,1\n")
    paths = {"OUT": tmp_path / "out", "RUN": tmp_path / "run", "SRC": tmp_path / "model.pt",
             "TRACE": tmp_path / "t.csv", "CSV": tmp_path / "out.csv"}  # fmt: skip
    argv = [str(paths.get(a, a)) for a in argv]
    err = refused(capsys, main, argv, keeps=tmp_path, expected=130)
    assert err.endswith(": interrupted\n")
