"""`python -m calibration.validate.pool`: percentiles over several validations' replays."""

import json
from pathlib import Path

import pandas as pd
import pytest

from calibration.validate.pool import main, pool
from tests.refusal import refused

POLICIES = ("random", "startup-aware")


def _validation(out: Path, replays: dict[tuple[int, int], dict[str, tuple]]) -> Path:
    """A validation's `--out` as `calibration.validate` writes it: per (seed, replay), each
    policy's real and simulated TTFTs."""
    runs: dict[str, list[dict]] = {}
    for (seed, replay), by_policy in replays.items():
        folder = out / (f"seed-{seed}" if replay == 0 else f"seed-{seed}/replay-{replay}")
        folder.mkdir(parents=True, exist_ok=True)
        for policy, (real, simulated) in by_policy.items():
            for side, ttft in (("real", real), ("sim", simulated)):
                pd.DataFrame({"arrival_s": 0.0, "ttft_s": ttft}).to_csv(
                    folder / f"{policy}-{side}.csv", index=False
                )
            runs.setdefault(policy, []).append({"seed": seed, "replay": replay})
    report = {"policies": {policy: {"runs": found} for policy, found in runs.items()}}
    (out / "report.json").write_text(json.dumps(report))
    return out


def test_requests_are_pooled_over_validations_and_replays(tmp_path):
    # One request a replay: the first validation's random TTFT is 2.0 real, 4.0
    # simulated; the second's two replays add 6.0 and 8.0 real, 8.0 and 8.0 simulated.
    # Pooled, the three requests' medians are 6.0 and 8.0; the second's alone, 7.0 and 8.0.
    first = _validation(
        tmp_path / "a",
        {(1, 0): {"random": ([2.0], [4.0]), "startup-aware": ([1.0], [1.0])}},
    )
    second = _validation(
        tmp_path / "b",
        {
            (2, 0): {"random": ([6.0], [8.0]), "startup-aware": ([2.0], [2.0])},
            (2, 1): {"random": ([8.0], [8.0]), "startup-aware": ([3.0], [4.0])},
        },
    )
    (first / "seed-1" / "unrelated.csv").write_text("not read\n")
    result = pool([first, second])
    random = result["policies"]["random"]
    assert (random["replays"], random["requests"]) == (3, 3)
    assert random["ttft_p50_real_s"] == 6.0 and random["ttft_p50_sim_s"] == 8.0
    both = pool([second])["policies"]["random"]
    assert both["ttft_p50_real_s"] == 7.0 and both["ttft_p50_sim_s"] == 8.0
    # The p99 of three requests interpolates towards the largest: random 7.96 real
    # (6 + 0.98 * 2), 8.0 simulated; startup-aware 2.98 and 3.96.
    assert result["p99_ratio_random_to_startup_aware_real"] == pytest.approx(7.96 / 2.98)
    assert result["p99_ratio_random_to_startup_aware_sim"] == pytest.approx(8.0 / 3.96)


def test_only_the_policies_of_every_validation_are_pooled(tmp_path):
    one = _validation(tmp_path / "a", {(1, 0): {p: ([1.0], [1.0]) for p in POLICIES}})
    other = _validation(tmp_path / "b", {(2, 0): {"random": ([1.0], [1.0])}})
    result = pool([one, other])
    assert list(result["policies"]) == ["random"]
    assert "p99_ratio_random_to_startup_aware_real" not in result


def test_the_table_prints_every_policy_and_the_ratio(tmp_path, capsys):
    out = _validation(tmp_path / "a", {(1, 0): {p: ([1.0, 3.0], [2.0, 3.0]) for p in POLICIES}})
    assert main([str(out)]) == 0
    printed = capsys.readouterr().out
    assert "random" in printed and "startup-aware" in printed
    assert "p99 random / startup-aware: real 1.000, sim 1.000" in printed


def test_json_is_the_pooled_result(tmp_path, capsys):
    out = _validation(tmp_path / "a", {(1, 0): {p: ([1.0], [2.0]) for p in POLICIES}})
    assert main([str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(pool([out])))


def test_a_folder_that_is_no_validation_is_refused(tmp_path, capsys):
    refused(capsys, main, [str(tmp_path)], str(tmp_path), "report.json", keeps=tmp_path)


def test_a_report_of_another_shape_is_refused(tmp_path, capsys):
    (tmp_path / "report.json").write_text('{"scenario": {}}')
    refused(capsys, main, [str(tmp_path)], "report.json", keeps=tmp_path)


def test_a_missing_table_is_named(tmp_path, capsys):
    out = _validation(tmp_path / "a", {(1, 0): {p: ([1.0], [2.0]) for p in POLICIES}})
    (out / "seed-1" / "random-sim.csv").unlink()
    refused(capsys, main, [str(out)], "random-sim.csv", keeps=tmp_path)


def test_validations_with_no_policy_in_common_are_refused(tmp_path, capsys):
    one = _validation(tmp_path / "a", {(1, 0): {"random": ([1.0], [1.0])}})
    other = _validation(tmp_path / "b", {(2, 0): {"locality": ([1.0], [1.0])}})
    refused(capsys, main, [str(one), str(other)], "no policy", keeps=tmp_path)


def test_a_validation_given_twice_is_refused(tmp_path, capsys):
    out = _validation(tmp_path / "a", {(1, 0): {p: ([1.0], [2.0]) for p in POLICIES}})
    refused(capsys, main, [str(out), str(tmp_path / "." / "a")], "given twice", keeps=tmp_path)
