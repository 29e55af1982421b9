import numpy as np
import pandas as pd
import pytest

import traces
from traces.popularity import zipf_weights

MODELS = ["m0", "m1", "m2"]


def load(path, seed=0, **kwargs):
    return traces.read(path, MODELS, np.random.default_rng(seed), **kwargs).frame


def test_the_bundled_azure_2023_trace_reads_whole():
    frame = load(traces.default_trace())
    assert len(frame) == 8819
    assert list(frame.columns) == ["arrival_s", "model", "input_tokens", "output_tokens"]
    assert frame["arrival_s"].iloc[0] == 0.0 and frame["arrival_s"].is_monotonic_increasing
    # README statistics of the code trace: 3,435.9 s long, context tokens mean 2,048.
    assert frame["arrival_s"].iloc[-1] == pytest.approx(3435.9, abs=0.1)
    assert frame["input_tokens"].mean() == pytest.approx(2048, abs=1)
    # The first row, 2023-11-16 18:17:03.9799600 -> 18:17:04.0319600: 52 ms apart.
    assert frame["arrival_s"].iloc[1] == pytest.approx(0.052, abs=1e-9)


def test_models_follow_a_seeded_zipf_popularity():
    a, b = load(traces.default_trace(), seed=3), load(traces.default_trace(), seed=3)
    assert a["model"].tolist() == b["model"].tolist()
    share = a["model"].value_counts(normalize=True)
    assert share["m0"] > share["m1"] > share["m2"]
    assert share["m0"] == pytest.approx(6 / 11, abs=0.02)  # 1 / (1 + 1/2 + 1/3)
    assert load(traces.default_trace(), seed=4)["model"].tolist() != a["model"].tolist()


def test_zipf_weights_are_inverse_rank_powers_summing_to_one():
    assert zipf_weights(4, 0.0).tolist() == [0.25] * 4
    # Exponent 1: 1, 1/2, 1/3 over their sum 11/6.
    assert zipf_weights(3, 1.0).tolist() == pytest.approx([6 / 11, 3 / 11, 2 / 11])
    # Exponent 2: 1, 1/4 over their sum 5/4.
    assert zipf_weights(2, 2.0).tolist() == pytest.approx([0.8, 0.2])
    assert zipf_weights(5, 1.2).sum() == pytest.approx(1.0)


def test_canonical_csv_and_parquet_read_the_same(tmp_path):
    frame = pd.DataFrame(
        {
            "arrival_s": [1.5, 0.5, 2.0],
            "model": ["m1", "m0", "m2"],
            "input_tokens": [10, 20, 30],
            "output_tokens": [1, 2, 3],
            "request_id": ["x", "y", "z"],
        }
    )
    frame.to_csv(tmp_path / "t.csv", index=False)
    frame.to_parquet(tmp_path / "t.parquet", index=False)
    from_csv, from_parquet = load(tmp_path / "t.csv"), load(tmp_path / "t.parquet")
    assert from_csv["request_id"].tolist() == ["y", "x", "z"]  # sorted by arrival
    pd.testing.assert_frame_equal(from_csv, from_parquet, check_dtype=False)


AZURE = "TIMESTAMP,ContextTokens,GeneratedTokens\r\n"
CANON = "arrival_s,model,input_tokens,output_tokens\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (AZURE + "2023-11-16 18:17:03.9799600,10,1\r\nyesterday,10,1", "line 3: TIMESTAMP"),
        (AZURE + "2023-11-16 18:17:03.97,10,0", "line 2: GeneratedTokens must be an integer"),
        (AZURE + "2023-11-16 18:17:03.97,1.5,3", "line 2: ContextTokens must be an integer"),
        (CANON + "0,m0,1,1\n1,m9,1,1\n", "line 3: model 'm9' is not in the catalog"),
        (CANON + "0,m0,1,1\n-1,m0,1,1\n", "line 3: arrival_s must be a number >= 0"),
        (CANON + "0,m0,1,1\n\n1,m0,1,1\n", "line 3: blank line"),
        (CANON + "0,m0,1,1,7\n", "line 2: expected 4 fields, saw 5"),
        (CANON + "0,m0,1,1\n0,m0,1,1,7\n", "line 3: expected 4 fields, saw 5"),
        ("when,what\n1,2\n", "line 1: unrecognised header"),
        ("", "line 1"),
    ],
)
def test_malformed_traces_name_the_file_and_line(tmp_path, text, expected):
    path = tmp_path / "bad.csv"
    path.write_bytes(text.encode())
    with pytest.raises(traces.TraceError) as err:
        load(path)
    assert str(err.value).startswith(str(path))
    assert expected in str(err.value) and "\n" not in str(err.value)


def test_a_forced_format_names_the_missing_columns(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("arrival_s,model\n0,m0\n")
    with pytest.raises(traces.TraceError, match=r"line 1: missing column\(s\) input_tokens"):
        load(path, fmt="canonical")


def test_a_missing_trace_and_an_unknown_format_are_refused(tmp_path):
    with pytest.raises(traces.TraceError, match="no such file"):
        load(tmp_path / "none.csv")
    path = tmp_path / "t.csv"
    path.write_text(CANON + "0,m0,1,1\n")
    with pytest.raises(traces.TraceError, match="unknown trace format"):
        load(path, fmt="azure-2077")


def test_model_draws_are_numpys_choice_made_in_chunks():
    """Chunking keeps the stream: seeds give the workloads they gave before."""
    from traces.popularity import CHUNK, assign_models

    rows = CHUNK + 12_345
    drawn = assign_models(rows, MODELS, 1.0, np.random.default_rng(9))
    expected = np.random.default_rng(9).choice(3, size=rows, p=[6 / 11, 3 / 11, 2 / 11])
    assert np.array_equal(drawn.codes, expected)
    assert drawn.codes.dtype == np.int8
