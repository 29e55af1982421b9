"""Requests by the tier that served them, real beside simulated: what moves a median
that falls between the TTFT's modes.

A cold TTFT is a few seconds from DRAM or SSD and several times that from the remote
store, a warm one a fraction of a second. Where a policy serves about half its requests
from the store, its median sits among them, and a few requests more or fewer there move
it by seconds whatever each stage takes: the stage tables cannot show that, these
counts do. A request's tier is its instance's when it was placed on it ("warm" if that
instance was ready), as both sides' request tables record it.
"""

import pandas as pd

from calibration.validate.compare import median_or_none

SERVED = ("warm", "dram", "ssd", "remote")


def requests_by_tier(requests: pd.DataFrame) -> dict[str, dict[str, float | int | None]]:
    """Per tier, the requests it served and their median TTFT, in s (None where none)."""
    out = {}
    for tier in SERVED:
        ttft = requests.loc[requests["tier"] == tier, "ttft_s"].dropna()
        out[tier] = {"requests": len(ttft), "ttft_median_s": median_or_none(ttft)}
    return out
