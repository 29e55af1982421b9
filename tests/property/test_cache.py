from hypothesis import given, settings
from hypothesis import strategies as st

from sim.model.cache import CheckpointCache


def make(capacity):
    changes = []
    cache = CheckpointCache(capacity, lambda model, held: changes.append((model, held)))
    return cache, changes


def test_least_recently_used_is_evicted_first():
    cache, changes = make(10)
    cache.admit("a", 4)
    cache.admit("b", 4)
    cache.touch("a")
    assert cache.admit("c", 4)
    assert cache.models() == ["a", "c"]
    assert ("b", False) in changes and cache.used == 8


def test_pinned_checkpoints_are_never_evicted():
    cache, _ = make(10)
    cache.admit("a", 4)
    cache.admit("b", 4)
    cache.pin("a")
    assert cache.admit("c", 4)
    assert cache.models() == ["a", "c"]
    cache.pin("c")
    assert not cache.admit("d", 4)  # only pinned entries are left to evict
    assert cache.models() == ["a", "c"]
    cache.unpin("a")
    assert cache.admit("d", 4)
    assert cache.models() == ["c", "d"]


def test_a_checkpoint_larger_than_the_cache_is_refused():
    cache, changes = make(10)
    cache.admit("a", 4)
    assert not cache.admit("huge", 11)
    assert cache.models() == ["a"] and changes == [("a", True)]


# Of the examples drawn, the share that must evict a checkpoint: a test of the capacity
# that never fills the cache checks little. Six operations at least, of up to 6 bytes in a
# 12-byte cache, and about seven in ten evict.
EVICTING_SHARE = 0.4


def test_capacity_is_never_exceeded():
    evicting: list[bool] = []  # per example, whether a checkpoint was evicted

    # Derandomized: the share is of the examples drawn, and a fixed draw cannot fall short
    # by chance on one run and not the next.
    @settings(max_examples=100, deadline=None, derandomize=True)
    @given(
        st.lists(st.tuples(st.sampled_from("abcdef"), st.integers(1, 6), st.booleans()), min_size=6)
    )
    def admits(operations: list[tuple[str, int, bool]]) -> None:
        cache, changes = make(12)
        pinned = set()
        for model, size, pin in operations:
            if model in pinned:
                cache.unpin(model)
                pinned.discard(model)
            elif cache.admit(model, size) and pin:
                cache.pin(model)
                pinned.add(model)
            assert cache.used <= cache.capacity
            assert pinned <= set(cache.models())
        evicting.append(any(not held for _, held in changes))

    admits()
    assert sum(evicting) >= EVICTING_SHARE * len(evicting), (sum(evicting), len(evicting))
