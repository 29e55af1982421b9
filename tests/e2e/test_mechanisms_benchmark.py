"""benchmarks/mechanisms.py end to end on a short window: one row per setting, every
column, and each mechanism visible in its own row."""

import subprocess
import sys


def _rows(text: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines()]


def test_the_table_has_a_row_per_setting_and_each_mechanism_shows(repo_root, tmp_path):
    out = tmp_path / "table.md"
    printed = subprocess.run(
        [
            sys.executable, str(repo_root / "benchmarks" / "mechanisms.py"),
            "--seeds", "1", "--window", "0:900", "--out", str(out),
        ],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    written = out.read_text()
    assert written in printed
    header, rule, *body = _rows(written)
    assert header == [
        "setting", "TTFT p50 (s)", "TTFT p99 (s)", "GPU-s",
        "loads dram", "loads ssd", "loads remote", "loads peer", "wakes",
    ]  # fmt: skip
    assert set(rule) == {"---"}
    rows = {row[0]: row[1:] for row in body}
    assert list(rows) == [
        "ServerlessLLM", "+ peer multicast", "+ execute-while-load",
        "+ sleeping engines", "+ peer and execute-while-load", "all together",
    ]  # fmt: skip
    peer, wakes = 6, 7
    assert float(rows["ServerlessLLM"][peer]) == 0 and float(rows["ServerlessLLM"][wakes]) == 0
    assert float(rows["+ peer multicast"][peer]) > 0
    assert float(rows["+ sleeping engines"][wakes]) > 0
    pair = rows["+ peer and execute-while-load"]
    assert float(pair[peer]) > 0 and float(pair[wakes]) == 0
    assert float(rows["all together"][peer]) > 0 and float(rows["all together"][wakes]) > 0
    # One seed gives no interval: each figure stands alone.
    assert all("(" not in cell for row in rows.values() for cell in row)


def test_a_bad_seed_count_is_one_line_and_exit_2(repo_root):
    done = subprocess.run(
        [sys.executable, str(repo_root / "benchmarks" / "mechanisms.py"), "--seeds", "0"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "--seeds" in done.stderr
