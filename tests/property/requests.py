"""Requests drawn for the two-model TINY cluster (`tests/conftest.py`): (arrival_s,
model, input_tokens, output_tokens) rows in its first 20 s."""

from hypothesis import strategies as st

Row = tuple[float, str, int, int]


def request_rows(max_output: int) -> st.SearchStrategy[Row]:
    """One request for `a` or `b`, of up to 2,048 prompt and `max_output` output tokens."""
    return st.tuples(
        st.floats(0.0, 20.0, allow_nan=False),
        st.sampled_from(["a", "b"]),
        st.integers(1, 2048),
        st.integers(1, max_output),
    )


def request_lists(max_output: int, max_size: int) -> st.SearchStrategy[list[Row]]:
    """One to `max_size` requests (`request_rows`), unsorted."""
    return st.lists(request_rows(max_output), min_size=1, max_size=max_size)
