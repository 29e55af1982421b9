import pytest

from thaw_kernel.units import parse_bandwidth, parse_size


def test_sizes_in_decimal_and_binary_units():
    assert parse_size("13.4GB") == 13_400_000_000
    assert parse_size("512GiB") == 512 * 2**30
    assert parse_size("2TB") == 2 * 10**12
    assert parse_size(4096) == 4096
    assert parse_size("1e3") == 1000


def test_bandwidths_in_bytes_and_bits():
    assert parse_bandwidth("6GB/s") == 6e9
    assert parse_bandwidth("10Gb/s") == 1.25e9
    assert parse_bandwidth("2GiB/s") == 2 * 2**30
    assert parse_bandwidth(1.5e9) == 1.5e9


@pytest.mark.parametrize("bad", ["fast", "10Gb", "12 parsecs", "GB", "1.2.3GB"])
def test_bad_sizes_are_rejected(bad):
    with pytest.raises(ValueError):
        parse_size(bad)


@pytest.mark.parametrize("bad", ["6GB", "10G/s", "quick/s", True])
def test_bad_bandwidths_are_rejected(bad):
    with pytest.raises(ValueError):
        parse_bandwidth(bad)
