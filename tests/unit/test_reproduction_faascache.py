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
    config = faascache.cluster(functions, 64)
    assert len(config.models) == 100 and config.servers[0].gpus == 64
    busiest = config.models["f000"]  # 273,379 invocations, 5.52 MB, 928 / 106,660 ms
    assert busiest.gpus == 1 and busiest.max_batch == 1
    assert 1 / busiest.prefill_tokens_per_s == pytest.approx(0.928)


def test_overhead_is_cold_seconds_over_run_seconds(faascache):
    config = faascache.cluster(faascache.sample_functions(32), 64)
    # f000 runs 0.928 s warm and a cold start adds 106.66 - 0.928 s: cold, then warm.
    trace = pd.DataFrame(
        {"model": "f000", "arrival_s": [0.0, 200.0], "input_tokens": 1, "output_tokens": 1}
    )
    overhead, cold, queued = faascache.measure(config, trace, "locality", "fixed:600", 0)
    assert cold == 0.5 and queued == 0.0
    assert overhead == pytest.approx((106.660 - 0.928) / (2 * 0.928), rel=1e-3)
