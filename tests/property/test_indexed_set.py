"""The cluster's buckets of servers: `random` draws by position, so the order of an
`IndexedSet` is part of every result, and `move` must leave the order `discard` then
`add` leave."""

from hypothesis import given
from hypothesis import strategies as st

from sim.model.indexed_set import IndexedSet

# (which of three buckets, server): a server moves from wherever it is to that bucket.
moves = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 9)), max_size=60)


@given(moves)
def test_a_move_leaves_the_order_a_discard_and_an_add_leave(steps):
    by_move = [IndexedSet() for _ in range(3)]
    by_pair = [IndexedSet() for _ in range(3)]
    where: dict[int, int] = {}
    for bucket, server in steps:
        old = where.get(server)
        if old is None:
            by_move[bucket].add(server)
            by_pair[bucket].add(server)
        elif old != bucket:
            by_move[old].move(server, by_move[bucket])
            by_pair[old].discard(server)
            by_pair[bucket].add(server)
        where[server] = bucket
    for moved, paired in zip(by_move, by_pair, strict=True):
        assert list(moved) == list(paired)
        assert [moved[k] for k in range(len(moved))] == list(paired)
    for server, bucket in where.items():
        assert server in by_move[bucket]
        assert all(server not in other for b, other in enumerate(by_move) if b != bucket)
