"""How fast, and in how much memory, does thaw read a week-long Azure LLM 2024 trace?
A benchmark: it prints figures and never fails on time.

    python benchmarks/trace_parse.py --rows 5000000 [--keep FILE] [--json]

It writes a file in the 2024 layout (`TIMESTAMP,ContextTokens,GeneratedTokens`, stamps
ending in `+00:00`, one in a hundred without a fraction, as in the real files), then loads
it with `traces.read` in a fresh process (format detection, parsing, model assignment,
sorting: what `python -m sim run --trace` does) and reports rows per second, the process's
peak resident memory (Linux VmHWM), that after imports, and the growth per row, which
extrapolates to the real files' 27 million rows.
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

WEEK_ROWS = 27_000_000  # the 2024 week-long code and conversation files are of this order

# VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the parent across fork and exec,
# so the generator's memory would show up as the loader's.
_LOAD = """
import json, sys, time
import traces
from thaw_kernel import seeds

def hwm_kib():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))

before = hwm_kib()
start = time.perf_counter()
trace = traces.read(sys.argv[1], ["a", "b", "c", "d"], seeds.rng(0, "trace"))
seconds = time.perf_counter() - start
print(json.dumps({"rows": len(trace.frame), "format": trace.format, "seconds": seconds,
                  "rss_after_imports_kib": before, "peak_rss_kib": hwm_kib()}))
"""


def write_2024(path: Path, rows: int, seed: int) -> None:
    """A 2024-layout file of `rows` requests, built column-wise with Arrow (no row loop)."""
    rng = np.random.default_rng(seed)
    gaps_us = rng.exponential(1e6 / 45.0, rows).astype(np.int64)  # ~45 requests/s
    gaps_us[rng.random(rows) < 0.01] = 1_000_000  # whole seconds: stamps with no fraction
    start_us = 1_715_299_200_000_000  # 2024-05-10 00:00:00 UTC
    whole = rng.random(rows) < 0.01
    stamps_us = start_us + np.cumsum(gaps_us)
    stamps_us[whole] -= stamps_us[whole] % 1_000_000
    stamps = pa.array(stamps_us, pa.timestamp("us"))
    text = pc.strftime(stamps, format="%Y-%m-%d %H:%M:%S")  # fraction: six digits
    text = pc.replace_substring(text, ".000000", "")
    text = pc.binary_join_element_wise(text, pa.scalar("+00:00"), "")
    table = pa.table(
        {
            "TIMESTAMP": text,
            "ContextTokens": rng.lognormal(7.0, 1.0, rows).astype(np.int64) + 1,
            "GeneratedTokens": rng.lognormal(4.5, 1.2, rows).astype(np.int64) + 1,
        }
    )
    with path.open("wb") as handle:
        handle.write(b"TIMESTAMP,ContextTokens,GeneratedTokens\n")
        pacsv.write_csv(
            table, handle, pacsv.WriteOptions(include_header=False, quoting_style="none")
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000, help="rows (default: 5,000,000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", type=Path, default=None, help="write the file here, keep it")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = args.keep or Path(folder) / "week-2024.csv"
        started = time.perf_counter()
        write_2024(path, args.rows, args.seed)
        written = time.perf_counter() - started
        result = subprocess.run(
            [sys.executable, "-c", _LOAD, str(path)], capture_output=True, text=True, check=True
        )
        found = json.loads(result.stdout)
        found["file_bytes"] = path.stat().st_size
    found["write_seconds"] = written
    found["rows_per_s"] = found["rows"] / found["seconds"]
    growth = (found["peak_rss_kib"] - found["rss_after_imports_kib"]) * 1024
    found["bytes_per_row"] = growth / found["rows"]
    found["extrapolated_27M_rows_gib"] = (
        found["rss_after_imports_kib"] * 1024 + found["bytes_per_row"] * WEEK_ROWS
    ) / 2**30
    if args.json:
        print(json.dumps(found))
        return
    print(
        f"file              {found['rows']:,} rows, {found['file_bytes'] / 1e6:,.0f} MB "
        f"(written in {written:.1f} s), detected as {found['format']}"
    )
    print(f"load              {found['seconds']:.2f} s = {found['rows_per_s']:,.0f} rows/s")
    print(
        f"peak RSS          {found['peak_rss_kib'] / 2**20:.2f} GiB "
        f"({found['rss_after_imports_kib'] / 2**10:.0f} MiB after imports)"
    )
    print(
        f"growth            {found['bytes_per_row']:.0f} B/row -> "
        f"{found['extrapolated_27M_rows_gib']:.1f} GiB for 27M rows"
    )


if __name__ == "__main__":
    main()
