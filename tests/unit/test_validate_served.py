"""`requests_by_tier`: the requests each tier served and their median TTFT, from a
request table as both sides of a validation write it."""

import math

import pandas as pd

from calibration.validate.served import requests_by_tier


def test_each_tier_counts_its_requests_and_their_median_ttft():
    table = pd.DataFrame(
        {
            "tier": ["remote", "remote", "ssd", "warm", "remote", "ssd"],
            "ttft_s": [7.0, 3.0, 2.0, 0.02, math.nan, 2.5],  # a request that never got one
        }
    )
    served = requests_by_tier(table)
    assert served == {
        "warm": {"requests": 1, "ttft_median_s": 0.02},
        "dram": {"requests": 0, "ttft_median_s": None},
        "ssd": {"requests": 2, "ttft_median_s": 2.25},
        "remote": {"requests": 2, "ttft_median_s": 5.0},
    }
