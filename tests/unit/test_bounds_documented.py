"""The Guarantees page (docs/guarantees.md) states every bound in thaw_kernel/bounds.py, at
the value the code enforces: each bound's row of the page's table is found by its "What"
cell and the number in its "Bound" cell read, so a row missing, renamed or stating
another value fails here, as does a bound added to the code without a row."""

import ast
from fractions import Fraction
from pathlib import Path

from thaw_kernel import bounds

GUARANTEES = Path(__file__).parents[2] / "docs" / "guarantees.md"

# Each bound: the "What" cell of its row, and which end of the "Bound" cell it is.
ROWS = {
    "TEXT_FILE_BYTES": ("A cluster TOML, sweep file or hardware profile", "max"),
    "INDEX_FILE_BYTES": ("A checkpoint's `index.json`", "max"),
    "FIELD_CHARS": ("A trace's model name or column name (one CSV field)", "max"),
    "SERVERS": ("Servers in a cluster (all groups), a model's `ssd_copies`", "max"),
    "GPUS_PER_SERVER": ("GPUs per server, per model instance", "max"),
    "MODELS": ("Models in a catalog", "max"),
    "HOST_CORES": ("Host CPU cores per server (`host_cores`, and in a profile)", "max"),
    "HOST_CORES_MIN": ("Host CPU cores per server (`host_cores`, and in a profile)", "min"),
    "CPU_S_PER_GB": (
        "A load's CPU per GB (`load_cpu_s_per_gb`, `download_cpu_s_per_gb`)",
        "max",
    ),
    "MAX_BATCH": ("`max_batch`", "max"),
    "LAYERS": ("A model's `layers`", "max"),
    "MIGRATION_ROUNDS": ("`migration.max_rounds`", "max"),
    "BYTES": ("Sizes (GPU memory, DRAM, SSD, weights, bytes per token)", "max"),
    "BANDWIDTH_MIN": ("Bandwidths", "min"),
    "BANDWIDTH_MAX": ("Bandwidths", "max"),
    "ZIPF": ("`zipf_exponent`, `--zipf`", "max"),
    "TOKEN_RATE_MIN": ("`prefill_tokens_per_s`", "min"),
    "TOKEN_RATE_MAX": ("`prefill_tokens_per_s`", "max"),
    "SECONDS": (
        "Times and durations (arrivals, start-ups, keep-alive, decode steps, `--window`)",
        "max",
    ),
    "SECONDS_MIN": ("Positive durations (a decode step)", "min"),
    "TOKENS": ("Token counts per request (traces, `--tokens`)", "max"),
    "COUNT": ("Other counts in traces (images, invocations)", "max"),
    "REQUESTS": (
        "Requests in one trace after `--replicate`, `--scale` or Functions 2019 counts; "
        "`traces generate --requests`, `--rate` and `--rate` x `--duration`",
        "max",
    ),
    "REPLICATE": ("`--replicate`", "max"),
    "SCALE": ("`--scale`, `--compress` (and 1 / `--compress`)", "max"),
    "CV": ("`--cv` (at least 1 / 1,000), and CVs in `--tokens lognormal:`", "max"),
    "SEEDS": ("Sweep seeds (`seeds = N`)", "max"),
    "SEED": ("A seed (`--seed`, a sweep's `seeds` list)", "max"),
    "GRID_POINTS": ("Sweep grid points", "max"),
    "ALIGNMENT": ("Checkpoint alignment", "max"),
}
UNITS = {
    "bytes": 1,
    "MiB": 2**20,
    "GiB": 2**30,
    "characters": 1,
    "CPU-seconds": 1,
    "kB/s": 10**3,
    "EB/s": 10**18,
    "s": 1,
    "ns": Fraction(1, 10**9),
}


def table() -> dict[str, str]:
    """The page's bounds table: each row's "What" cell to its "Bound" cell."""
    lines = GUARANTEES.read_text().split("\n| What | Bound |\n|---|---|\n", 1)[1]
    rows = {}
    for line in lines.splitlines():
        if not line.startswith("|"):
            break
        what, bound = line.strip("| ").split(" | ")
        rows[what] = bound
    return rows


def number(text: str) -> Fraction:
    """A number as the page writes it ("4,096", "2^63 - 1", "2 x 10^8", "1e-5", "0.01"),
    exactly."""
    source = text.replace(",", "").replace("^", "**").replace(" x ", " * ")

    def value(node: ast.expr) -> Fraction:
        match node:
            case ast.Constant():
                return Fraction(ast.get_source_segment(source, node))
            case ast.UnaryOp(op=ast.USub(), operand=operand):
                return -value(operand)
            case ast.BinOp(left=left, op=ast.Pow(), right=right):
                return value(left) ** int(value(right))
            case ast.BinOp(left=left, op=ast.Mult(), right=right):
                return value(left) * value(right)
            case ast.BinOp(left=left, op=ast.Sub(), right=right):
                return value(left) - value(right)
        raise ValueError(f"not a number the page writes: {text!r}")

    return value(ast.parse(source, mode="eval").body)


def quantity(text: str) -> Fraction:
    """One end of a bound, its unit applied: "64 MiB", "1 kB/s", "1,000 CPU-seconds"."""
    head, _, unit = text.rpartition(" ")
    if not head or unit[0].isdigit():
        return number(text)
    assert unit in UNITS, f"a unit the test does not know: {text!r}"
    return number(head) * UNITS[unit]


def ends(bound: str) -> dict[str, Fraction]:
    """A "Bound" cell's ends, without its remarks ("(1 EiB)", ", a power of two")."""
    bound = bound.split(" (")[0].split(", ")[0]
    if bound.startswith("at least "):
        return {"min": quantity(bound.removeprefix("at least "))}
    low, _, high = bound.rpartition(" to ")
    return {"min": quantity(low), "max": quantity(high)} if low else {"max": quantity(high)}


def test_the_page_s_numbers_are_read_as_written():
    assert number("2^63 - 1") == 2**63 - 1 and number("2 x 10^8") == 2 * 10**8
    assert number("1e-5") == Fraction(1, 100_000) and number("10^-6") == Fraction(1, 10**6)
    assert ends("8 bytes to 64 MiB, a power of two") == {"min": 8, "max": 64 * 2**20}
    assert ends("at least 1 ns") == {"min": Fraction(1, 10**9)}
    assert ends("2^60 bytes (1 EiB)") == {"max": 2**60}


def test_every_bound_is_on_the_guarantees_page_at_its_value():
    names = {name for name in vars(bounds) if name.isupper()}  # not KiB, MiB, GiB
    assert names == set(ROWS)
    rows = table()
    for name, (what, end) in ROWS.items():
        assert what in rows, f"{name}: no row {what!r} in docs/guarantees.md"
        written, value = ends(rows[what]).get(end), getattr(bounds, name)
        assert written is not None, f"{name}: the row {what!r} states no {end}"
        # Integers exactly; floats as the float nearest the written number.
        assert (written if isinstance(value, int) else float(written)) == value, (
            name,
            rows[what],
        )
