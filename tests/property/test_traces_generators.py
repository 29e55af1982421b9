"""Synthetic arrivals, invocation placement, function->model mapping, token lengths and
transformations: properties on large samples, with tolerances argued from sampling error."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from traces import reference_tokens, transform
from traces.arrivals import constant_rate
from traces.generate import synthesize
from traces.mapping import function_models
from traces.placement import place
from traces.tokens import draw_tokens

N = 200_000  # gaps per sample: small sampling error, a few ms to draw


def relative_errors(cv: float) -> tuple[float, float]:
    """Standard errors of the rate and of the CV estimated from N gamma gaps, relative.
    Mean of N gaps: sd/mean = cv/sqrt(N). Sample variance of a gamma with shape k = 1/cv^2
    has relative sd sqrt((2 + excess kurtosis 6/k) / N), and the CV's is half of it."""
    return cv / np.sqrt(N), 0.5 * np.sqrt((2 + 6 * cv * cv) / N)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(
    rate=st.floats(0.05, 500.0),
    cv=st.floats(0.25, 4.0),
    seed=st.integers(0, 2**32 - 1),
)
def test_renewal_arrivals_hit_the_requested_rate_and_cv(rate, cv, seed):
    t = constant_rate(np.random.default_rng(seed), rate, cv, count=N)
    gaps = np.diff(np.concatenate([[0.0], t]))
    rate_se, cv_se = relative_errors(cv)
    # Six standard errors: a false failure has odds ~1e-9 per example (the CV estimate of
    # very bursty gamma is skewed, so the normal tail is only a guide; six covers it).
    assert (N / t[-1]) / rate == pytest.approx(1.0, abs=6 * rate_se)
    assert (gaps.std() / gaps.mean()) / cv == pytest.approx(1.0, abs=6 * cv_se)


@settings(max_examples=10, deadline=None, derandomize=True)
@given(rate=st.floats(1.0, 50.0), cv=st.floats(0.5, 3.0), seed=st.integers(0, 2**32 - 1))
def test_a_duration_bounds_the_arrivals_and_sets_their_number(rate, cv, seed):
    duration = N / rate
    t = constant_rate(np.random.default_rng(seed), rate, cv, duration=duration)
    assert t.min() >= 0 and t.max() < duration and np.all(np.diff(t) >= 0)
    # The count of a renewal process over a long window has sd ~ cv * sqrt(N).
    assert abs(len(t) - N) < 6 * cv * np.sqrt(N) + 1


counts_matrix = arrays(np.int64, st.tuples(st.integers(1, 6), st.integers(1, 12)),
                       elements=st.integers(0, 40))  # fmt: skip


@settings(max_examples=60, deadline=None, derandomize=True)
@given(counts=counts_matrix, how=st.sampled_from(["uniform", "even"]), seed=st.integers(0, 99))
def test_count_preserving_placement_keeps_every_minutes_count(counts, how, seed):
    minutes = counts.shape[1]
    starts = np.arange(minutes) * 60.0 + 3600.0  # minutes need not start at 0
    function, t = place(counts, starts, how, 1.0, np.random.default_rng(seed))
    assert np.all(np.diff(t) >= 0)
    minute = ((t - 3600.0) // 60).astype(np.int64)
    placed = np.zeros_like(counts)
    np.add.at(placed, (function, minute), 1)
    assert np.array_equal(placed, counts)


def test_even_placement_spaces_a_minute_evenly():
    _, t = place(np.array([[4]]), np.array([0.0]), "even", 1.0, np.random.default_rng(0))
    assert t.tolist() == [7.5, 22.5, 37.5, 52.5]


@pytest.mark.parametrize(("how", "cv"), [("poisson", 1.0), ("gamma", 3.0)])
def test_poisson_and_gamma_placement_keep_counts_on_average_within_each_minute(how, cv):
    counts = np.array([[5000, 0, 20000], [100, 3000, 0]])
    function, t = place(counts, np.arange(3) * 60.0, how, cv, np.random.default_rng(1))
    placed = np.zeros_like(counts)
    np.add.at(placed, (function, (t // 60).astype(int)), 1)
    assert placed[0, 1] == placed[1, 2] == 0  # a silent minute stays silent
    # A renewal count over a stretch with n expected arrivals has sd ~ cv * sqrt(n).
    assert np.all(np.abs(placed - counts) <= 6 * cv * np.sqrt(counts) + 1)
    inside = t[(function == 0) & (t < 60)]
    gaps = np.diff(inside)
    assert gaps.std() / gaps.mean() == pytest.approx(cv, rel=0.15)


def test_function_to_model_mappings():
    functions = np.arange(10)
    assert function_models(functions, 10, 3, "stripe").tolist() == [0, 1, 2] * 3 + [0]
    assert function_models(functions, 10, 3, "round-robin").tolist() == [0] * 4 + [1] * 3 + [2] * 3
    # popularity: function 9 busiest, then 8, ...: the busiest block goes to model 0
    calls = np.repeat(functions, functions + 1)
    by_function = dict(zip(calls, function_models(calls, 10, 3, "popularity"), strict=True))
    assert [by_function[f] for f in (9, 8, 7, 6, 5, 0)] == [0, 0, 0, 0, 1, 2]


def test_token_specs():
    rng = np.random.default_rng(0)
    i, o = draw_tokens("fixed:100,7", 5, rng, reference_tokens)
    assert i.tolist() == [100] * 5 and o.tolist() == [7] * 5
    i, o = draw_tokens("lognormal:1000,0.5,200,1.5", N, rng, reference_tokens)
    assert i.mean() == pytest.approx(1000, rel=0.01) and o.mean() == pytest.approx(200, rel=0.05)
    assert i.std() / i.mean() == pytest.approx(0.5, rel=0.03) and o.min() >= 1
    bundled = reference_tokens(None)
    i, o = draw_tokens("trace", N, rng, reference_tokens)
    pairs = set(zip(bundled["input_tokens"], bundled["output_tokens"], strict=True))
    assert set(zip(i[:500], o[:500], strict=True)) <= pairs  # pairs drawn whole
    assert i.mean() == pytest.approx(bundled["input_tokens"].mean(), rel=0.02)


def frame_of(n, seed=0):
    rng = np.random.default_rng(seed)
    return synthesize(rng, ["a", "b"], rate=2.0, count=n, tokens="fixed:1,1",
                      reference=reference_tokens)  # fmt: skip


def test_window_compress_thin_and_replicate_scale_the_rate():
    frame = frame_of(50_000)
    span = frame["arrival_s"].iloc[-1]
    cut = transform.window(frame, 100.0, 1100.0)
    assert cut["arrival_s"].min() >= 0 and cut["arrival_s"].max() < 1000
    assert len(cut) == ((frame["arrival_s"] >= 100) & (frame["arrival_s"] < 1100)).sum()
    fast = transform.compress(frame, 4.0)
    assert fast["arrival_s"].iloc[-1] == pytest.approx(span / 4) and len(fast) == len(frame)
    rng = np.random.default_rng(3)
    thinned = transform.thin(frame, 0.3, rng)
    assert len(thinned) == pytest.approx(0.3 * len(frame), abs=6 * np.sqrt(len(frame) * 0.21))
    tripled = transform.replicate(frame, 2.5, rng)
    assert tripled["arrival_s"].is_monotonic_increasing
    assert tripled["arrival_s"].max() <= span * (1 + 1 / len(frame))
    assert len(tripled) == pytest.approx(2.5 * len(frame), abs=6 * np.sqrt(len(frame) * 0.25))


def test_remap_renames_and_merges_models():
    frame = pd.DataFrame({"model": pd.Categorical(["a", "b", "c", "a"])})
    out = transform.remap(frame, {"a": "x", "c": "b"})
    assert out["model"].tolist() == ["x", "b", "b", "x"]


def test_generation_is_seeded():
    a, b, c = frame_of(1000, seed=5), frame_of(1000, seed=5), frame_of(1000, seed=6)
    pd.testing.assert_frame_equal(a, b)
    assert not a["arrival_s"].equals(c["arrival_s"])
    assert a["model"].value_counts()["a"] > a["model"].value_counts()["b"]  # Zipf rank 1
