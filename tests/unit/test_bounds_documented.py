"""The Guarantees page (docs/guarantees.md) states every bound in thaw_kernel/bounds.py, at
the value the code enforces: a bound added or changed in one place and not the other
fails here."""

from pathlib import Path

from thaw_kernel import bounds

GUARANTEES = Path(__file__).parents[2] / "docs" / "guarantees.md"

# Each bound: its value, and how the page writes it in its row.
DOCUMENTED = {
    "TEXT_FILE_BYTES": (64 * 2**20, "| 64 MiB |"),
    "INDEX_FILE_BYTES": (2**30, "| 1 GiB |"),
    "FIELD_CHARS": (4096, "| 4,096 characters |"),
    "SERVERS": (100_000, "`ssd_copies` | 100,000 |"),
    "GPUS_PER_SERVER": (1024, "| 1,024 |"),
    "MODELS": (1_000_000, "| Models in a catalog | 1,000,000 |"),
    "HOST_CORES": (1_000_000, "(`host_cores`, and in a profile) | 0.01 to 1,000,000 |"),
    "HOST_CORES_MIN": (0.01, "| 0.01 to 1,000,000 |"),
    "CPU_S_PER_GB": (1000.0, "| 0 to 1,000 CPU-seconds |"),
    "MAX_BATCH": (2**20, "| 2^20 |"),
    "LAYERS": (100_000, "| A model's `layers` | 100,000 |"),
    "MIGRATION_ROUNDS": (1_000_000, "`migration.max_rounds` | 1,000,000 |"),
    "BYTES": (2**60, "| 2^60 bytes (1 EiB) |"),
    "BANDWIDTH_MIN": (1e3, "| 1 kB/s to"),
    "BANDWIDTH_MAX": (1e18, "to 1 EB/s |"),
    "ZIPF": (100.0, "| 0 to 100 |"),
    "TOKEN_RATE_MIN": (1e-5, "| 1e-5 to"),
    "TOKEN_RATE_MAX": (1e12, "to 1e12 |"),
    "SECONDS": (1e10, "| 1e10 s"),
    "SECONDS_MIN": (1e-9, "| at least 1 ns |"),
    "TOKENS": (10**11, "| 1 to 10^11 |"),
    "COUNT": (10**12, "| 10^12 |"),
    "REQUESTS": (2 * 10**8, "| 2 x 10^8 |"),
    "REPLICATE": (10**4, "| 1 to 10,000 |"),
    "SCALE": (1e6, "| 10^6 |"),
    "CV": (1000.0, "| 1,000 |"),
    "SEEDS": (100_000, "(`seeds = N`) | 100,000 |"),
    "SEED": (2**63 - 1, "| 0 to 2^63 - 1 |"),
    "GRID_POINTS": (1_000_000, "| Sweep grid points | 1,000,000 |"),
    "ALIGNMENT": (64 * 2**20, "| 8 bytes to 64 MiB, a power of two |"),
}


def test_every_bound_is_on_the_guarantees_page_at_its_value():
    names = {name for name in vars(bounds) if name.isupper()}  # not KiB, MiB, GiB
    assert names == set(DOCUMENTED)
    page = GUARANTEES.read_text()
    for name, (value, written) in DOCUMENTED.items():
        assert getattr(bounds, name) == value, name
        assert written in page, (name, written)
