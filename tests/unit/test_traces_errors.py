"""Malformed traces: every kind of damage gets one line naming the file, the line where
one applies, and the problem; through the library and through `python -m traces`."""

import subprocess
import sys

import numpy as np
import pytest
from refusal import assert_one_line, refused, tree

import traces
from traces.cli import main

LLM23 = "TIMESTAMP,ContextTokens,GeneratedTokens\r\n2023-11-16 18:17:03.9799600,10,1\r\n"
LLM24 = "TIMESTAMP,ContextTokens,GeneratedTokens\n2024-05-10 00:00:00+00:00,10,1\n"
MM25 = "TIMESTAMP,NumImages,ContextTokens,GeneratedTokens\n2025-05-20T00:00:00Z,1,5,5\n"
PROC = "arrived_at,num_prefill_tokens,num_decode_tokens\n0.5,5,5\n"
F19 = "HashOwner,HashApp,HashFunction,Trigger,1,2\no,a,f,http,1,2\n"
F21 = "app,func,end_timestamp,duration\na,f,10,1\n"
CANON = "arrival_s,model,input_tokens,output_tokens\n0,m0,1,1\n"

CASES = {
    # missing column, unknown header, wrong delimiter
    "missing column": ("arrival_s,model,input_tokens\n0,m0,1\n",
                       "line 1: missing column(s) output_tokens of the canonical format"),
    "unknown header": ("when,what\n1,2\n", "line 1: unrecognised header"),
    "wrong delimiter": ("TIMESTAMP;ContextTokens;GeneratedTokens\n2023-11-16 18:17:03;1;1\n",
                        "line 1: wrong delimiter"),
    "tabs": ("arrival_s\tmodel\tinput_tokens\toutput_tokens\n0\tm0\t1\t1\n",
             "line 1: wrong delimiter"),
    # non-numeric and empty fields, NaN
    "non-numeric tokens": (LLM23 + "2023-11-16 18:17:04.0,ten,1\r\n",
                           "line 3: ContextTokens must be an integer >= 1, got 'ten'"),
    "empty tokens": (LLM24 + "2024-05-10 00:00:01+00:00,,1\n",
                     "line 3: ContextTokens must be an integer >= 1, got ''"),
    "NaN tokens": (PROC + "1.0,nan,3\n", "line 3: num_prefill_tokens must be an integer >= 1"),
    "NaN arrival": (CANON + "NaN,m0,1,1\n", "line 3: arrival_s must be a number >= 0 and <= "
                    "1e+10, got nan"),
    "non-numeric arrival": (PROC + "soon,1,1\n", "line 3: arrived_at must be a number >= 0"),
    "empty model": (CANON + "1,,1,1\n", "line 3: model is empty"),
    "empty duration": (F21 + "a,f,11,\n", "line 3: duration must be a number >= 0, got ''"),
    "blank line": (CANON + "\n1,m0,1,1\n", "line 3: blank line"),
    "ragged row": (CANON + "1,m0,1,1,1\n", "line 3: expected 4 fields, saw 5"),
    # zero or negative tokens, negative counts and durations
    "zero tokens": (LLM23 + "2023-11-16 18:17:04.0,0,1", "line 3: ContextTokens must be an "
                    "integer >= 1 and <= 100000000000, got 0"),
    "negative tokens": (MM25 + "2025-05-20T00:00:01Z,0,5,-3\n",
                        "line 3: GeneratedTokens must be an integer >= 1 and <= 100000000000, "
                        "got -3"),
    # beyond the bounds: a 64-bit overflow, a time no clock holds, an unsigned wrap
    "tokens of 2^63": (CANON + "1,m0,9223372036854775808,1\n", "line 3: input_tokens must be "
                       "an integer >= 1 and <= 100000000000, got 9.223372036854776e+18"),
    "arrival of 1e308": (CANON + "1e308,m0,1,1\n", "line 3: arrival_s must be a number >= 0 "
                         "and <= 1e+10, got 1e+308"),
    "microsecond stamps as seconds": (PROC + "1700000000000000,1,1\n", "line 3: arrived_at"),
    "images of 2^64 - 1": (MM25 + "2025-05-20T00:00:01Z,18446744073709551615,5,5\n",
                           "line 3: NumImages must be an integer >= 0, got '18446744073709551615'"),
    "fractional tokens": (CANON + "1,m0,1.5,1\n", "line 3: input_tokens must be an integer"),
    "negative images": (MM25 + "2025-05-20T00:00:01Z,-1,5,5\n", "line 3: NumImages"),
    "negative count": (F19 + "o,a,g,http,0,-4\n", "line 3: minute 2 must be an invocation "
                       "count (an integer >= 0), got -4"),
    "non-numeric count": (F19 + "o,a,g,http,x,1\n", "line 3: 1 must be an invocation count"),
    "no minute columns": ("HashOwner,HashApp,HashFunction,Trigger\no,a,f,http\n",
                          "line 1: no minute columns"),
    "negative duration": (F21 + "a,f,11,-1\n", "line 3: duration must be a number >= 0"),
    # timestamps
    "unparsable timestamp": (LLM23 + "yesterday,10,1\r\n", "line 3: TIMESTAMP must be an ISO "
                             "8601 date and time, got 'yesterday'"),
    "naive among zoned": (LLM24 + "2024-05-10 00:00:01,10,1\n", "line 3: TIMESTAMP"),
    "impossible date": (MM25 + "2025-02-30T00:00:00Z,0,5,5\n", "line 3: TIMESTAMP"),
    # empty, header only, binary
    "empty file": ("", "line 1: the file is empty"),
    "whitespace only": ("\n\n", "line 1: the file is empty"),
    "header only": ("TIMESTAMP,ContextTokens,GeneratedTokens\r\n", "line 2: no rows after"),
    "header only 2019": ("HashOwner,HashApp,HashFunction,Trigger,1\n", "line 2: no rows after"),
    "binary garbage": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe", "not a text CSV file"),
    "bad UTF-8 later": (CANON.encode() + b"1,m\xff\xfe,1,1\n", "line 3: not UTF-8 text"),
    "unknown model": (CANON + "1,m9,1,1\n", "line 3: model 'm9' is not in the catalog"),
}  # fmt: skip


@pytest.mark.parametrize(("text", "expected"), CASES.values(), ids=CASES.keys())
def test_malformed_input_is_one_line_with_file_line_and_problem(tmp_path, text, expected):
    path = tmp_path / "bad.csv"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(traces.TraceError) as err:
        traces.read(path, ["m0", "m1"], np.random.default_rng(0))
    message = str(err.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    assert expected in message


def test_a_bad_parquet_file_and_bad_options_are_refused(tmp_path):
    rng = np.random.default_rng(0)
    (tmp_path / "t.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(traces.TraceError, match="not a readable Parquet file"):
        traces.read(tmp_path / "t.parquet", ["m0"], rng)
    (tmp_path / "t.csv").write_text(PROC)
    with pytest.raises(traces.TraceError, match="--remap: 'm7' is not in the catalog"):
        traces.read(tmp_path / "t.csv", ["m0"], rng, options=traces.Options(remap={"m0": "m7"}))
    with pytest.raises(traces.TraceError, match="unknown trace format"):
        traces.read(tmp_path / "t.csv", ["m0"], rng, fmt="azure-2077")
    with pytest.raises(traces.TraceError, match="no such file"):
        traces.read(tmp_path / "none.csv", ["m0"], rng)


def cli(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "traces", *args], cwd=cwd, capture_output=True, text=True
    )


# Through a real process: what a user sees, exit status included.
SUBPROCESS = ["wrong delimiter", "NaN arrival", "negative count", "unparsable timestamp",
              "binary garbage"]  # fmt: skip


@pytest.mark.parametrize("case", SUBPROCESS)
def test_the_cli_exits_2_with_one_line_and_writes_nothing(tmp_path, case):
    text, expected = CASES[case]
    (tmp_path / "bad.csv").write_bytes(text if isinstance(text, bytes) else text.encode())
    before = tree(tmp_path)
    result = cli("convert", "bad.csv", "-o", "out.parquet", cwd=tmp_path)
    assert_one_line(result.returncode, result.stdout, result.stderr, expected)
    assert result.stderr.startswith("python -m traces convert: error: bad.csv: ")
    assert tree(tmp_path) == before


@pytest.mark.parametrize("case", CASES)
def test_every_malformed_case_fails_stats_and_convert_the_same_way(
    tmp_path, capsys, monkeypatch, case
):
    text, expected = CASES[case]
    (tmp_path / "bad.csv").write_bytes(text if isinstance(text, bytes) else text.encode())
    monkeypatch.chdir(tmp_path)
    for command in (["stats", "bad.csv"], ["convert", "bad.csv", "-o", "out.csv"]):
        err = refused(capsys, main, [*command, "--models", "m0,m1"], expected, keeps=tmp_path)
        assert err.startswith(f"python -m traces {command[0]}: error: bad.csv: ")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["convert", "t.csv", "-o", "out.txt"],
            "out.txt: the output must end in .csv, .csv.gz or .parquet",
        ),
        (["convert", "t.csv", "-o", "nowhere/out.csv"], "nowhere: no such folder"),
        (["convert", "t.csv", "-o", "t.csv"], "t.csv: is the trace being converted"),
        (["convert", "t.csv", "-o", "mine.csv"], "mine.csv: is a directory"),
        (
            ["generate", "--rate", "1", "--requests", "3", "-o", "mine.csv"],
            "mine.csv: is a directory",
        ),
        (["stats", "t.csv", "--window", "9:3"], "--window: expected START:END"),
        (["stats", "t.csv", "--tokens", "lognormal:1,2"], "expected 4 positive numbers"),
        (["stats", "t.csv", "--thin", "1.5"], "--thin: expected a number in (0, 1]"),
        (["stats", "t.csv", "--models", "a,,b"], "--models: expected NAME[,NAME...]"),
        (["stats", "t.csv", "--cluster", "c.toml"], "c.toml: models: expected a non-empty"),
        (["stats", "t.csv", "--seed", "-2"], "--seed: expected an integer from 0 to"),
        (["stats", "t.csv", "--seed", str(2**64)], "--seed: expected an integer from 0 to"),
        (["stats", "t.csv", "--format", "nope"], "--format: invalid choice"),
        (
            ["generate", "--rate", "0", "--requests", "5", "-o", "g.csv"],
            "--rate: expected a number > 0",
        ),
        (["generate", "--rate", "1e-9", "--duration", "1", "-o", "g.csv"], "no requests"),
        # Each of these once ended in a traceback, or in a trace thaw would not read back.
        (
            ["generate", "--rate", "1e-300", "--requests", "5", "-o", "g.csv"],
            "--requests / --rate: 5e+300 s of arrivals; at most 1e+10 s",
        ),
        (
            ["generate", "--rate", "1", "--requests", "5", "--arrivals", "gamma", "--cv", "1e-300"],
            "--cv: expected 0.001 to 1000, got '1e-300'",
        ),
        (
            ["generate", "--rate", "1", "--requests", "5", "--models", "a,b,a", "-o", "g.csv"],
            "--models: 'a' is named twice",
        ),
        (["stats", "t.csv", "--remap", "a=b,a=c"], "--remap: 'a' is renamed twice"),
        (["stats", "t.csv", "--window", "100:200"], "t.csv: no requests (after --window"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(tmp_path, capsys, monkeypatch, args, expected):
    (tmp_path / "t.csv").write_text(PROC)
    (tmp_path / "c.toml").write_text("models = 3\n")
    (tmp_path / "mine.csv").mkdir()
    (tmp_path / "mine.csv" / "notes.txt").write_text("the user's own notes")
    monkeypatch.chdir(tmp_path)
    refused(capsys, main, args, expected, keeps=tmp_path)
