"""The Serverless in the Wild reproduction's measures: each application's cold-start
share, their 3rd quartile, the idle warm time, and the fixed curve read at a waste."""

import pandas as pd
import pytest


@pytest.fixture
def shahrad(repo_root, monkeypatch):
    monkeypatch.syspath_prepend(str(repo_root / "benchmarks"))
    from reproductions import shahrad

    return shahrad


def test_the_fixed_curve_is_read_between_its_neighbours_in_log_waste(shahrad):
    fixed = [(0.8, 100.0), (0.2, 10_000.0), (0.5, 1_000.0)]
    assert shahrad.fixed_curve(fixed, 1_000.0) == pytest.approx(0.5)
    assert shahrad.fixed_curve(fixed, 100.0 * 10**0.5) == pytest.approx(0.65)
    assert shahrad.fixed_curve(fixed, 10.0) == pytest.approx(0.8)  # the nearest end beyond


def test_cold_shares_and_waste_under_a_fixed_keep_alive(shahrad):
    from sim.config import read_config

    config = read_config(shahrad.CLUSTER)
    first, second = list(config.models)[:2]
    # m0: at 0 (cold), 100 (warm under 600 s), 2000 (cold again); m1: at 0 (cold).
    trace = pd.DataFrame(
        {
            "model": [first, second, first, first],
            "arrival_s": [0.0, 0.0, 100.0, 2000.0],
            "input_tokens": 1,
            "output_tokens": 1,
        }
    )
    quartile, waste = shahrad.measure(config, trace, "locality", "fixed:600", 0)
    # Shares 2/3 and 1: the 75th percentile of the two is 2/3 + 0.75 (1 - 2/3).
    assert quartile == pytest.approx(2 / 3 + 0.75 / 3)
    # Each instance idles 600 s after each of its last requests (a GPU each), and m0's
    # also between its first two requests: the 100 s gap less its 1 s start-up and the
    # requests' milliseconds.
    assert waste == pytest.approx(3 * 600.0 + 99.0, rel=0.001)
