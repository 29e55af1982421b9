"""The tiers scenario's caches, sized to its checkpoints: what decides where loads come
from (a DRAM cache for the least popular only, SSDs that cannot hold both popular ones)."""

import pytest

from calibration.validate.scenario import GB, TIERS_QUICK, tiers_sized


def test_the_bundled_setting_is_its_checkpoints_sized():
    sized = tiers_sized(TIERS_QUICK.checkpoint_bytes)
    assert (TIERS_QUICK.dram_bytes, TIERS_QUICK.ssd_bytes) == (
        sized["dram_bytes"],
        sized["ssd_bytes"],
    )


def test_the_caches_hold_what_the_scenario_says_and_no_more():
    sizes = (3 * GB, 2 * GB, GB)
    sized = tiers_sized(sizes)
    largest, second, smallest = sizes
    assert smallest <= sized["dram_bytes"] < second
    assert largest + smallest <= sized["ssd_bytes"] < largest + second
    assert sized["checkpoint_bytes"] == sizes


def test_checkpoints_too_close_in_size_cannot_be_told_apart_by_the_caches():
    with pytest.raises(ValueError, match="exceed the smallest"):
        tiers_sized((2 * GB, 105 * GB // 100, GB))
