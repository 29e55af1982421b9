"""benchmarks/tiers_conditioning.py on one training trace: a row per setting and policy,
each figure computed, and the store's rate reaching the simulator through the profile."""

import json
import subprocess
import sys


def _cells(repo_root, *args):
    printed = subprocess.run(
        [sys.executable, str(repo_root / "benchmarks" / "tiers_conditioning.py"), "--json",
         "--seeds", "1", "--keep-alive", "0", *args],
        check=True, capture_output=True, text=True, cwd=repo_root,
    ).stdout  # fmt: skip
    return json.loads(printed)


def test_each_setting_and_policy_gets_its_conditioning(repo_root):
    cells = _cells(repo_root, "--rate", "0.75", "--store", "200MB/s,900MB/s")
    assert [(c["store_bytes_per_s"], c["policy"]) for c in cells] == [
        (store, policy)
        for store in (200e6, 900e6)
        for policy in ("random", "locality", "startup-aware")
    ]
    for cell in cells:
        assert cell["keep_alive_s"] == 0 and cell["rate"] == 0.75 and cell["span_s"] > 60
        assert all(cell[f"p{q}_move"] > 0 for q in (50, 90, 99))  # every stage scaled
        assert 0 < cell["load_share"] < 1 and 0 < cell["remote_share"] < 1
    # A store 4.5 times as fast shortens the downloads that the loading share is made of.
    slow, fast = cells[0], cells[3]
    assert fast["load_share"] < slow["load_share"]


def test_checkpoint_sizes_are_an_axis_with_the_caches_sized_to_them(repo_root):
    cells = _cells(repo_root, "--store", "450MB/s", "--checkpoints", "2,1.5,1", "3,2,1")
    assert [c["checkpoint_bytes"] for c in cells] == [[2e9, 1.5e9, 1e9]] * 3 + [[3e9, 2e9, 1e9]] * 3
    # Every load of the popular model carries half as much again: each policy's figures
    # move (its loading share, with the stores near 0.85 either way, may go either way:
    # longer loads, but longer queues behind them too).
    for small, big in zip(cells[:3], cells[3:], strict=True):
        assert any(big[f] != small[f] for f in ("p50_move", "p99_move", "load_share"))


def test_a_profile_without_a_store_or_a_bad_figure_is_one_line_and_exit_2(repo_root, tmp_path):
    bundled = json.loads((repo_root / "calibration/profiles/dev-vm-tiers.json").read_text())
    del bundled["machine"]["settings"]["remote_rate_bytes_per_s"]
    storeless = tmp_path / "storeless.json"
    storeless.write_text(json.dumps(bundled))
    for args, named in (
        (["--profile", str(storeless)], "storeless.json: no remote store measured"),
        (["--profile", str(tmp_path / "absent.json")], "absent.json"),
        (["--rate", "0"], "--rate"),
        (["--store", "fast"], "fast"),
        (["--store", "0MB/s"], "--store"),
        (["--checkpoints", "2,1"], "expected 3 positive sizes"),
        (["--checkpoints", "2,1.05,1"], "exceed the smallest"),
    ):
        done = subprocess.run(
            [sys.executable, str(repo_root / "benchmarks" / "tiers_conditioning.py"), *args],
            capture_output=True, text=True, cwd=repo_root,
        )  # fmt: skip
        assert done.returncode == 2 and done.stdout == ""
        assert named in done.stderr and len(done.stderr.strip().splitlines()) == 1
