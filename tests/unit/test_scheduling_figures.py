"""The summary's scheduling figures, computed by hand on one server with two GPUs.

a's instance: remote load (2 s start-up + 4 GiB at 1 GiB/s), ready at 6; prefills at
6-6.5 and 10-10.5, idle otherwise, stopped 8 s after its last request (18.5). c's
instance: the same from 20, ready at 26, prefill to 26.5, stopped at 34.5.
"""

import pytest
from conftest import simulate, tiny_config

from sim.results.summary import jain_index, scheduling_figures

C = """
[models.c]
weights = "4GiB"
gpus = 1
prefill_tokens_per_s = 1024.0
decode_step_s = 0.125
ttft_slo_s = 5.0
"""


@pytest.fixture
def figures(tmp_path):
    config = tiny_config(tmp_path, extra=C)
    rows = [(0.0, "a", 512, 1), (10.0, "a", 512, 1), (20.0, "c", 512, 1)]
    return scheduling_figures(simulate(config, rows, check=True))


def test_gpu_seconds_split_into_starting_idle_and_serving(figures):
    assert figures["gpu_seconds_by_state"] == {
        "serving": 1.0 + 0.5,  # the three prefills
        "idle_warm": (10.0 - 6.5) + (18.5 - 10.5) + (34.5 - 26.5),
        "starting": 6.0 + 6.0,
        "sleeping": 0.0,
    }


def test_slo_attainment_cold_starts_and_per_model_tails(figures):
    # TTFTs: a 6.5 and 0.5 (SLO 10 s by default), c 6.5 (SLO 5 s).
    assert figures["ttft_slo_attainment"] == 2 / 3
    assert figures["cold_start_ratio"] == 2 / 3  # the second a request joined warm
    a, b, c = (figures["per_model"][m] for m in ("a", "b", "c"))
    assert a["requests"] == 2 and a["queue_p99_s"] == 0.0
    assert a["ttft_p99_s"] == pytest.approx(0.5 + 0.99 * (6.5 - 0.5))  # numpy's linear
    assert (c["slo_attainment"], c["ttft_slo_s"]) == (0.0, 5.0)
    assert b == {
        "requests": 0,
        "ttft_p99_s": None,
        "queue_p99_s": None,
        "ttft_slo_s": 10.0,
        "slo_attainment": None,
        "slowdown_mean": None,
    }


def test_fairness_is_jains_index_over_the_models_mean_slowdown(figures):
    # A request alone prefills 512 tokens in 0.5 s: a's slowdowns 13 and 1, c's 13.
    assert figures["per_model"]["a"]["slowdown_mean"] == 7.0
    assert figures["per_model"]["c"]["slowdown_mean"] == 13.0
    assert figures["fairness_jain_slowdown"] == (7 + 13) ** 2 / (2 * (7**2 + 13**2))


def test_jains_index_spans_one_over_n_to_one():
    assert jain_index([3.0, 3.0, 3.0]) == 1.0
    assert jain_index([5.0, 0.0, 0.0, 0.0]) == 0.25
    assert jain_index([]) is None
