import tomllib

from hypothesis import given
from hypothesis import strategies as st

from sim import toml_writer

scalars = st.one_of(
    st.booleans(),
    st.integers(-(2**62), 2**62),
    st.floats(allow_nan=False),
    st.text(),
)
keys = st.text(min_size=1, max_size=10)
tables = st.dictionaries(keys, st.one_of(scalars, st.lists(st.integers())), max_size=4)


@given(
    top=tables,
    nested=st.dictionaries(keys, tables, max_size=3),
    array=st.lists(tables.filter(bool), max_size=3),
)
def test_round_trips_through_tomllib(top, nested, array):
    table = {**top, "nested": nested, "array": array}
    if not array:
        table["array"] = []
    assert tomllib.loads(toml_writer.dumps(table)) == table
