"""Mutated inputs through the command lines, in process: whatever bytes a careless or
hostile user hands over, a command exits 0 or 2 with one line on stderr and no
traceback, and a file of the user's in the output directory is never changed."""

import argparse
import json
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from refusal import assert_one_line, exit_status

from sim.runner.cli import main as sim
from traces.cli import _parser as traces_parser
from traces.cli import main as traces

CLUSTER = b"""keep_alive_s = 60.0
instance_startup_s = 2.0
[[servers]]
name = "s"
count = 2
gpus = 2
gpu_memory = "16GiB"
dram = "64GiB"
ssd = "512GiB"
ssd_read = "2GB/s"
network = "10Gb/s"
pcie = "16GB/s"
[models.a]
weights = "4GiB"
gpus = 1
prefill_tokens_per_s = 4000.0
decode_step_s = 0.02
max_batch = 8
ssd_copies = 1
"""
TRACE = b"""arrival_s,model,input_tokens,output_tokens
0.0,a,12,4
0.5,a,30,2
1.25,a,7,9
"""
SWEEP = b"""policies = ["random", "locality"]
seeds = 2
rate_scales = [1.0, 2.0]
traces = ["trace.csv"]
clusters = ["cluster.toml"]
keep_alive = "fixed:30"
"""
PROFILE = json.dumps(
    {
        "version": 1,
        "derived": {
            "ssd_read_bytes_per_s": 2e9,
            "dram_to_gpu_bytes_per_s": 1.2e10,
            "instance_startup_s": 1.5,
            "decode_step_s": 0.02,
            "decode_step_per_request_s": 0.001,
            "recompute_tokens_per_s": 4000.0,
            "reference_model_bytes": 4294967296,
            "migration_fixed_s": 0.05,
        },
    }
).encode()

# Edits a careless or hostile user makes: numbers pushed to extremes, bytes that are not
# text, marks that spreadsheets add, nesting, truncation, TOML dates and times where
# numbers or names belong, a field of thousands of characters.
HOSTILE = [
    b"1e308", b"-1", b"0", b"nan", b"inf", b"9223372036854775808", b"18446744073709551615",
    b"1e-300", b"\xff\xfe", b"\x00", b"\xef\xbb\xbf", b"\n", b"\r\n", b",", b'"', b"[",
    b"{", b"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[", b"=", b" ", b"\t", b"a\nb", b"10000000000",
    b"1979-05-27", b"1979-05-27T07:32:00Z", b"07:32:00", b"99999999999999999999999",
    b"x" * 5000,
]  # fmt: skip


@st.composite
def mutated(draw, base: bytes) -> bytes:
    data = bytearray(base)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        how = draw(st.sampled_from(["insert", "replace", "delete", "truncate"]))
        piece = draw(st.sampled_from(HOSTILE) | st.binary(min_size=1, max_size=8))
        if how == "insert":
            data[at:at] = piece
        elif how == "replace":
            data[at : at + len(piece)] = piece
        elif how == "delete":
            del data[at : at + draw(st.integers(1, 16))]
        else:
            del data[at:]
    return bytes(data)


def check(capsys, status, sentinel):
    out, err = capsys.readouterr()
    if status != 0:
        assert_one_line(status, out, err)
    assert "Traceback" not in err
    assert sentinel.read_bytes() == b"the user's own notes"


def setup(tmp_path):
    """The run directory to write, in a folder beside a file of the user's."""
    for name in ("cluster.toml", "trace.csv", "profile.json"):
        (tmp_path / name).unlink(missing_ok=True)
    folder = tmp_path / "work"
    folder.mkdir(exist_ok=True)
    sentinel = folder / "notes.txt"
    sentinel.write_bytes(b"the user's own notes")
    return folder / "run", sentinel


PROPERTY = settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)


@PROPERTY
@given(text=mutated(CLUSTER))
def test_a_mutated_cluster(tmp_path, capsys, text):
    out, sentinel = setup(tmp_path)
    (tmp_path / "cluster.toml").write_bytes(text)
    (tmp_path / "trace.csv").write_bytes(TRACE)
    argv = ["run", "--cluster", str(tmp_path / "cluster.toml"), "--trace",
            str(tmp_path / "trace.csv"), "--out", str(out), "--quiet"]  # fmt: skip
    check(capsys, sim(argv), sentinel)


@PROPERTY
@given(text=mutated(TRACE))
def test_a_mutated_trace(tmp_path, capsys, text):
    out, sentinel = setup(tmp_path)
    (tmp_path / "cluster.toml").write_bytes(CLUSTER)
    (tmp_path / "trace.csv").write_bytes(text)
    argv = ["run", "--cluster", str(tmp_path / "cluster.toml"), "--trace",
            str(tmp_path / "trace.csv"), "--out", str(out), "--quiet"]  # fmt: skip
    check(capsys, sim(argv), sentinel)
    argv = ["convert", str(tmp_path / "trace.csv"), "--models", "a", "-o",
            str(out.with_suffix(".csv"))]  # fmt: skip
    check(capsys, traces(argv), sentinel)


@PROPERTY
@given(text=mutated(PROFILE))
def test_a_mutated_profile(tmp_path, capsys, text):
    out, sentinel = setup(tmp_path)
    (tmp_path / "cluster.toml").write_bytes(CLUSTER)
    (tmp_path / "trace.csv").write_bytes(TRACE)
    (tmp_path / "profile.json").write_bytes(text)
    argv = ["run", "--cluster", str(tmp_path / "cluster.toml"), "--trace",
            str(tmp_path / "trace.csv"), "--profile", str(tmp_path / "profile.json"),
            "--out", str(out), "--quiet"]  # fmt: skip
    check(capsys, sim(argv), sentinel)


@settings(PROPERTY, max_examples=30)
@given(text=mutated(SWEEP))
def test_a_mutated_sweep_file(tmp_path, capsys, text):
    out, sentinel = setup(tmp_path)
    (tmp_path / "cluster.toml").write_bytes(CLUSTER)
    (tmp_path / "trace.csv").write_bytes(TRACE)
    (tmp_path / "sweep.toml").write_bytes(text)
    argv = ["sweep", str(tmp_path / "sweep.toml"), "--jobs", "1", "--out", str(out), "--quiet"]
    check(capsys, sim(argv), sentinel)


def run_with(tmp_path, capsys, arrival=b"1.25", network=b'"10Gb/s"', startup=b"2.0"):
    out, _ = setup(tmp_path)
    cluster = CLUSTER.replace(b'"10Gb/s"', network).replace(b"startup_s = 2.0", b"startup_s = "
                                                            + startup)  # fmt: skip
    (tmp_path / "cluster.toml").write_bytes(cluster)
    (tmp_path / "trace.csv").write_bytes(TRACE.replace(b"1.25", arrival))
    argv = ["run", "--cluster", str(tmp_path / "cluster.toml"), "--trace",
            str(tmp_path / "trace.csv"), "--out", str(out), "--quiet"]  # fmt: skip
    status = sim(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err and "bug in thaw" not in err, err
    return status, err


@pytest.mark.parametrize(
    "change",
    [
        {"arrival": b"1e308"},
        {"arrival": b"1700000000000000"},  # microsecond epoch stamps given as seconds
        {"network": b"1e-300"},
        {"network": b"1e308"},
        {"startup": b"1e308"},
    ],
)
def test_values_beyond_the_clock_are_bad_input_naming_the_key(tmp_path, capsys, change):
    status, err = run_with(tmp_path, capsys, **change)
    assert status == 2 and err.count("\n") == 1
    assert ("arrival_s" if "arrival" in change else next(iter(change))) in err


@pytest.mark.parametrize(
    "change",
    [
        {"arrival": b"1e10"},  # the largest time allowed
        {"arrival": b"1700000000"},  # epoch seconds
        {"network": b"1000"},  # the slowest link allowed
        {"startup": b"1e10"},
    ],
)
def test_the_extremes_allowed_simulate_without_tripping_an_invariant(tmp_path, capsys, change):
    status, err = run_with(tmp_path, capsys, **change)
    assert status == 0, err


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """A run directory `sim run` wrote, to damage copies of."""
    folder = tmp_path_factory.mktemp("finished")
    (folder / "cluster.toml").write_bytes(CLUSTER)
    (folder / "trace.csv").write_bytes(TRACE)
    argv = ["run", "--cluster", str(folder / "cluster.toml"), "--trace",
            str(folder / "trace.csv"), "--out", str(folder / "run"), "--quiet"]  # fmt: skip
    assert sim(argv) == 0
    return folder / "run"


@settings(PROPERTY, max_examples=40)
@given(data=st.data())
def test_a_summary_edited_by_hand(tmp_path, capsys, finished_run, data):
    from analysis.cli import main as analysis

    out, sentinel = setup(tmp_path)
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(finished_run, out)
    summary = out / "summary.json"
    summary.write_bytes(data.draw(mutated(summary.read_bytes())))
    report = out.parent / "report"
    shutil.rmtree(report, ignore_errors=True)
    check(capsys, analysis(["report", str(out), "-o", str(report)]), sentinel)


def generator_options() -> list[str]:
    """Every option of `traces generate` that takes a value, read from its parser (so that
    a new one is covered without a new case), but where it writes: `--out`."""
    parser = traces_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    generate = commands.choices["generate"]
    return sorted(
        action.option_strings[-1]
        for action in generate._actions
        if action.option_strings and action.nargs is None and action.dest != "out"
        and not isinstance(action, argparse._StoreConstAction | argparse._HelpAction)
    )  # fmt: skip


@settings(PROPERTY, max_examples=100)
@given(
    option=st.sampled_from(generator_options()),
    value=st.sampled_from([h.decode("latin-1") for h in HOSTILE] + ["1e-300", "2.5", "-0"]),
)
def test_a_generator_option_at_its_extreme(tmp_path, capsys, option, value):
    out, sentinel = setup(tmp_path)
    argv = ["generate", "--rate", "1", "--requests", "5", "--arrivals", "gamma"]
    argv += [option, value, "-o", str(out.with_suffix(".csv"))]
    check(capsys, exit_status(traces, argv), sentinel)  # argparse's refusals exit
