"""The FaasCache reproduction's setting: the sample's functions as models on memory slots,
and the cold-start overhead measured from a run."""

import pandas as pd
import pytest


@pytest.fixture
def faascache(repo_root, monkeypatch):
    monkeypatch.syspath_prepend(str(repo_root / "benchmarks"))
    from reproductions import faascache

    return faascache


def test_each_function_is_a_model_on_the_slots_its_memory_needs(faascache):
    functions = faascache.sample_functions(32)
    assert len(functions) == 100 and (functions["slots"] >= 1).all()
    config = faascache.cluster(functions, 64, "drop")
    assert len(config.models) == 100 and config.servers[0].gpus == 64
    assert config.queue == "drop"
    busiest = config.models["f000"]  # 273,379 invocations, 5.52 MB, 928 / 106,660 ms
    assert busiest.gpus == 1 and busiest.max_batch == 1
    assert 1 / busiest.prefill_tokens_per_s == pytest.approx(0.928)


def test_overhead_is_cold_seconds_over_run_seconds(faascache):
    config = faascache.cluster(faascache.sample_functions(32), 64, "drop")
    # f000 (one slot) runs 0.928 s warm and a cold start adds 106.66 - 0.928 s: cold,
    # then warm.
    trace = pd.DataFrame(
        {"model": "f000", "arrival_s": [0.0, 200.0], "input_tokens": 1, "output_tokens": 1}
    )
    overhead, cold, dropped = faascache.measure(config, trace, "locality", "fixed:600", 0)
    assert cold == 0.5 and dropped == 0.0
    assert overhead == pytest.approx((106.660 - 0.928) / (2 * 0.928), rel=1e-3)


def test_an_invocation_that_finds_no_memory_is_dropped_and_adds_no_overhead(faascache):
    config = faascache.cluster(faascache.sample_functions(32), 64, "drop")
    # 65 invocations of f000 at once on 64 one-slot containers: one finds no memory.
    trace = pd.DataFrame(
        {"model": "f000", "arrival_s": [0.0] * 65, "input_tokens": 1, "output_tokens": 1}
    )
    overhead, cold, dropped = faascache.measure(config, trace, "locality", "fixed:600", 0)
    assert cold == 1.0 and dropped == pytest.approx(1 / 65)
    assert overhead == pytest.approx((106.660 - 0.928) / 0.928, rel=1e-3)
