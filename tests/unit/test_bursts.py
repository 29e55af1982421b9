"""traces.bursts: the burst profile's corners and mean worked by hand, and arrivals whose
counts follow it."""

import numpy as np
import pytest

from traces.bursts import Bursts, bursty_arrivals

# One burst a minute from 5 s: up 2 s to 5x, 20.5 s held, down 2 s. Over 300 s, five
# bursts each add 2 x (2 s x 2) + 20.5 s x 4 = 90 rate-seconds to the base's 300: mean 2.5.
BURSTS = Bursts(first_s=5.0, period_s=60.0, factor=5.0, ramp_s=2.0, hold_s=20.5)


def test_the_profile_ramps_holds_and_returns_to_the_base():
    rate = BURSTS.rate(np.array([0.0, 5.0, 6.0, 7.0, 27.5, 28.5, 29.5, 40.0, 66.0]), 300.0)
    assert rate.tolist() == [1.0, 1.0, 3.0, 5.0, 5.0, 3.0, 1.0, 1.0, 3.0]
    assert BURSTS.mean(300.0) == pytest.approx(2.5)


def test_arrivals_follow_the_mean_rate_and_the_bursts():
    arrival = bursty_arrivals(np.random.default_rng(0), BURSTS, 5.0, 300.0)
    assert np.all(np.diff(arrival) >= 0) and arrival[0] >= 0 and arrival[-1] < 300
    assert len(arrival) == pytest.approx(1500, rel=0.1)  # Poisson: 1500 +- 39
    held = np.sum((arrival >= 7) & (arrival < 27.5)) / 20.5  # 10 per second expected
    base = np.sum((arrival >= 30) & (arrival < 65)) / 35.0  # 2 per second expected
    assert held == pytest.approx(10.0, rel=0.25) and base == pytest.approx(2.0, rel=0.35)


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"period_s": 20.0}, "a period must hold its burst"),
        ({"ramp_s": 0.0}, "ramp_s and factor > 0"),
        ({"hold_s": -1.0}, "hold_s >= 0"),
    ],
)
def test_a_profile_whose_corners_would_not_rise_in_time_is_refused(fields, expected):
    given = {"first_s": 5.0, "period_s": 60.0, "factor": 5.0, "ramp_s": 2.0, "hold_s": 20.5}
    with pytest.raises(ValueError, match=expected):
        Bursts(**(given | fields))
