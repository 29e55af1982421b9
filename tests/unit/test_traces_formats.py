"""Every trace format thaw reads, on hand-made files (tests/data/traces/) whose values are
checked exactly, and on the real Azure Functions 2019 sample."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import traces
from traces import Options

DATA = Path(__file__).parents[1] / "data" / "traces"
SAMPLE = DATA / "azure-functions-2019-sample"
MODELS = ["m0", "m1", "m2"]


def read(name, seed=0, **options):
    path = name if isinstance(name, Path) else DATA / name
    return traces.read(path, MODELS, np.random.default_rng(seed), options=Options(**options))


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("canonical.csv", "canonical"),
        ("azure-llm-2023.csv", "azure-llm-2023"),
        ("azure-llm-2024.csv", "azure-llm-2024"),
        ("azure-multimodal-2025.csv", "azure-multimodal-2025"),
        ("processed.csv", "processed"),
        ("azure-functions-2019.csv", "azure-functions-2019"),
        ("azure-functions-2021.csv", "azure-functions-2021"),
    ],
)
def test_every_format_is_detected_from_its_header_and_read_canonically(name, fmt):
    assert traces.detect_format(DATA / name) == fmt
    trace = read(name)
    assert trace.format == fmt
    frame = trace.frame
    assert list(frame.columns[:4]) == ["arrival_s", "model", "input_tokens", "output_tokens"]
    assert frame["arrival_s"].is_monotonic_increasing and (frame["arrival_s"] >= 0).all()
    assert frame["model"].isin(MODELS).all()
    assert frame["input_tokens"].dtype == np.int64 and (frame["input_tokens"] >= 1).all()
    assert (frame["output_tokens"] >= 1).all()


def test_azure_2023_crlf_seven_digits_and_an_out_of_order_row_is_sorted_and_counted():
    trace = read("azure-llm-2023.csv")
    # 18:15:50.9951680 is written after 18:15:50.9951690: one row out of order.
    assert trace.out_of_order == 1
    assert trace.frame["arrival_s"].tolist() == pytest.approx(
        [0.0, 4.314578, 4.314579, 13.31941], abs=1e-9
    )
    assert trace.frame["input_tokens"].tolist() == [374, 879, 396, 1]


def test_azure_2024_stamps_with_and_without_a_fraction():
    frame = read("azure-llm-2024.csv").frame
    assert frame["arrival_s"].tolist() == pytest.approx([0.0, 0.99007, 1.49007], abs=1e-9)
    assert frame["output_tokens"].tolist() == [10, 8, 27]


def test_azure_multimodal_2025_z_stamps_and_images_are_not_tokens():
    frame = read("azure-multimodal-2025.csv").frame
    assert frame["arrival_s"].tolist() == [0.0, 1.75, 2.5]
    assert frame["input_tokens"].tolist() == [1200, 80, 2900]
    assert "NumImages" not in frame


def test_processed_csv_keeps_its_seconds():
    frame = read("processed.csv").frame
    assert frame["arrival_s"].tolist() == [0.0, 0.25, 1.75]
    assert frame["output_tokens"].tolist() == [64, 128, 9]


def test_functions_2021_arrival_is_end_minus_duration_then_sorted():
    trace = read("azure-functions-2021.csv", mapping="stripe")
    # arrivals 10.0, 8.0, 11.75, 10.5 -> shifted by the first (8.0) and sorted
    assert trace.frame["arrival_s"].tolist() == [0.0, 2.0, 2.5, 3.75]
    # functions by first appearance: appA/fx 0, appB/fy 1, appA/fz 2 -> stripe m0 m1 m2
    assert trace.frame["model"].tolist() == ["m1", "m0", "m0", "m2"]
    assert trace.notes["functions"] == 3 and trace.out_of_order is None


def test_functions_2019_minute_columns_are_matched_by_name_not_position():
    # header 2,1,3: f1 has 3 calls in minute 1, 0 in 2, 1 in 3; f2 2 in minute 2; f3 5 in 3.
    frame = read("azure-functions-2019.csv", placement="even").frame
    minute = (frame["arrival_s"] // 60).astype(int)
    assert minute.value_counts().sort_index().tolist() == [3, 2, 6]
    # even placement: k-th of n at (k + 1/2) * 60/n; minute 0 holds f1's 3 calls.
    assert frame["arrival_s"].iloc[:3].tolist() == [10.0, 30.0, 50.0]
    assert (frame["model"].iloc[:3] == "m0").all()  # f1 -> m0 under stripe


def test_app_mapping_gives_each_application_its_model_busiest_first():
    # o1/a1 (f1: 4 calls, f2: 2) and o2/a2 (f3: 5 calls): a1 is busier, so m0.
    frame = read("azure-functions-2019.csv", mapping="app").frame
    assert frame["model"].value_counts().to_dict() == {"m0": 6, "m1": 5, "m2": 0}
    trace = read("azure-functions-2021.csv", mapping="app")
    # appA (fx twice, fz once) -> m0; appB (fy) -> m1; arrivals as above.
    assert trace.frame["model"].tolist() == ["m1", "m0", "m0", "m0"]
    assert trace.notes == {"functions": 3, "apps": 2}


def test_app_mapping_needs_a_model_per_application(tmp_path):
    rows = ["HashOwner,HashApp,HashFunction,Trigger,1"]
    rows += [f"o,a{i},f{i},http,1" for i in range(4)]
    path = tmp_path / "apps.csv"
    path.write_text("\n".join(rows) + "\n")
    with pytest.raises(traces.TraceError, match="4 applications, but the catalog has 3"):
        read(path, mapping="app")


def test_the_real_functions_2019_sample_keeps_every_invocation():
    raw = pd.read_csv(SAMPLE / "invocations.csv")
    minutes = [c for c in raw.columns if c.isdigit()]
    trace = read(SAMPLE / "invocations.csv")
    assert len(trace.frame) == raw[minutes].to_numpy().sum()
    assert trace.frame["arrival_s"].max() < len(minutes) * 60
    per_minute = np.bincount((trace.frame["arrival_s"] // 60).astype(int), minlength=480)
    assert per_minute.tolist() == raw[minutes].sum().tolist()
    assert trace.notes["functions"] == 100


def test_functions_2019_durations_and_both_memory_layouts_are_joined_by_name():
    trace = read(
        "azure-functions-2019.csv",
        durations=DATA / "azure-functions-2019-durations.csv",
        memory=DATA / "azure-functions-2019-memory-per-app.csv",
    )
    notes = trace.notes
    # f1 (4 calls, 100 ms) and f2 (2 calls, 1000 ms): (400 + 2000) / 6 = 400 ms
    assert notes["functions_with_durations"] == 2 and notes["mean_duration_ms"] == 400.0
    # per app: a1 (f1, f2: 6 calls) 128 MB, a2 (f3: 5 calls) 256 MB
    assert notes["functions_with_memory"] == 3
    assert notes["mean_memory_mb"] == pytest.approx((6 * 128 + 5 * 256) / 11)
    sample = read(
        SAMPLE / "invocations.csv",
        durations=SAMPLE / "durations.csv",
        memory=SAMPLE / "memory.csv",  # the per-function layout
    ).notes
    assert sample["functions_with_durations"] == sample["functions_with_memory"] == 100


def test_canonical_keeps_optional_columns_and_parquet_reads_the_same(tmp_path):
    from_csv = read("canonical.csv").frame
    assert from_csv["request_id"].tolist() == ["r1", "r2", "r3"]
    assert from_csv["slo_ttft_s"].tolist() == [1.5, 1.5, 2.0]
    pd.read_csv(DATA / "canonical.csv").to_parquet(tmp_path / "t.parquet")
    from_parquet = read(tmp_path / "t.parquet").frame
    pd.testing.assert_frame_equal(from_csv, from_parquet, check_dtype=False)


def test_forcing_a_format_overrides_detection():
    trace = traces.read(
        DATA / "azure-llm-2023.csv", MODELS, np.random.default_rng(0), fmt="azure-llm-2024"
    )
    assert trace.format == "azure-llm-2024" and len(trace.frame) == 4
