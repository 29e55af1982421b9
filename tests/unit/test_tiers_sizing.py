"""The tiers scenario's caches, sized to its checkpoints: what decides where loads come
from (a DRAM cache for the least popular only, SSDs that cannot hold both popular ones);
and the memory a replay holds, checked before it starts, its DRAM copies sharing the
remote store's pages."""

import mmap
from dataclasses import replace

import pytest

from calibration.checkpoint.format import BLOB_NAME
from calibration.validate.scenario import (
    GB,
    MODELS,
    OVER_ASKED,
    QUICK,
    SCENARIOS,
    SHM,
    TIERS_QUICK,
    Layout,
    Scenario,
    share_store_pages,
    tiers_sized,
    workspace,
    write_cluster,
)
from sim.config import read_config
from thaw_kernel.errors import InputError


def test_the_bundled_setting_is_its_checkpoints_sized():
    sized = tiers_sized(TIERS_QUICK.checkpoint_bytes)
    assert (TIERS_QUICK.dram_bytes, TIERS_QUICK.ssd_bytes) == (
        sized["dram_bytes"],
        sized["ssd_bytes"],
    )


@pytest.mark.parametrize("name", ["tiers", "tiers-serial"])
def test_the_tiers_scenarios_differ_only_in_who_loads_and_the_simulator_is_told(tmp_path, name):
    quick, full = SCENARIOS[name]
    assert quick.store is full.store is (name == "tiers")
    assert replace(quick, name="tiers", store=True) == TIERS_QUICK
    layout = Layout(tmp_path, tmp_path)
    write_cluster(quick, layout, dict(zip(MODELS, quick.checkpoint_bytes, strict=True)))
    assert read_config(layout.cluster).load_beside_startup is quick.store


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


def test_the_memory_a_replay_holds_is_the_store_the_caches_and_a_load_a_server():
    # The remote store's three checkpoints, whose pages the DRAM caches share, and on
    # each of the two servers the largest checkpoint loading into a DRAM file.
    # Each checkpoint's files with up to `OVER_ASKED` more than its asked bytes.
    assert TIERS_QUICK.shm_bytes == (2 + 1.5 + 1) * GB + 2 * 2 * GB + 5 * OVER_ASKED
    # Without a store, each server's DRAM cache full beside its load.
    local = replace(TIERS_QUICK, remote_rate=0.0)
    assert local.shm_bytes == 2 * (TIERS_QUICK.dram_bytes + 2 * GB + OVER_ASKED)
    assert QUICK.shm_bytes == 0  # the decoders' own checkpoints, tens of MB


def test_a_cached_copy_shares_the_stores_pages_and_a_mapped_one_keeps_its_own(tmp_path):
    layout = Layout(tmp_path / "work", tmp_path / "shm")
    blob, store = layout.dram_copy(0, "m") / BLOB_NAME, layout.store / "m" / BLOB_NAME
    for path, fill in ((store, b"s"), (blob, b"c")):  # told apart by their bytes here
        path.parent.mkdir(parents=True)
        path.write_bytes(fill * 8192)
    with blob.open("rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        share_store_pages(layout, 0, "m")
        assert mapped[:] == b"c" * 8192  # an instance's map keeps its pages
    assert blob.stat().st_ino == store.stat().st_ino and blob.read_bytes() == b"s" * 8192
    assert sorted(p.name for p in blob.parent.iterdir()) == [BLOB_NAME]


def test_a_workspace_without_room_for_it_is_refused_and_leaves_nothing(tmp_path):
    huge = Scenario(requests=1, rate=1.0, checkpoint_bytes=(10**18,), remote_rate=1.0)
    refused = pytest.raises(InputError, match=r"the scenario holds up to .* GB there at once")
    before = set(SHM.glob("thaw-test-*"))  # another run's, on a shared machine, stay
    with refused, workspace(tmp_path, "thaw-test-", huge.shm_bytes):
        pytest.fail("a workspace without room was made")
    assert not list(tmp_path.iterdir())
    assert set(SHM.glob("thaw-test-*")) == before
