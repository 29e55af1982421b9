"""`python -m calibration.validate.pool`: percentiles over several validations' replays."""

import json
from pathlib import Path

import pandas as pd
import pytest

from calibration.validate.pool import main, pool
from tests.refusal import refused

POLICIES = ("random", "startup-aware")


def _validation(
    out: Path, replays: dict[tuple[int, int], dict[str, tuple]], rate: float = 0.75
) -> Path:
    """A validation's `--out` as `calibration.validate` writes it: per (seed, replay), each
    policy's real and simulated TTFTs; its scenario's trace at `rate` requests/s."""
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
    seed = min(seed for seed, _ in replays)
    report = {
        "scenario": {"name": "tiers", "seed": seed, "repeats": 1, "replays": 1, "rate": rate},
        "policies": {policy: {"runs": found} for policy, found in runs.items()},
    }
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


def test_the_table_prints_every_policy_s_figures_and_the_ratio(tmp_path, capsys):
    out = _validation(
        tmp_path / "a",
        {(1, 0): {"random": ([2.0, 4.0], [3.0, 4.0]), "startup-aware": ([1.0], [2.0])}},
    )
    assert main([str(out)]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    # random's p50: 3.00 real, 3.50 simulated (+16.7%); startup-aware's 1.00 and 2.00.
    assert "3.00 /   3.50 s  +16.7%" in rows["random"]
    assert "1.00 /   2.00 s +100.0%" in rows["startup-aware"]
    # p99: 3.98 / 1.00 real, 3.99 / 2.00 simulated.
    assert "p99 random / startup-aware: real 3.980, sim 1.995 (-49.9%)" in rows["p99"]


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
    (tmp_path / "b").mkdir()
    again = tmp_path / "b" / ".." / "a"  # another spelling of the same folder
    refused(capsys, main, [str(out), str(again)], "given twice", keeps=tmp_path)


def test_a_replay_in_two_validations_is_refused(tmp_path, capsys):
    one = _validation(tmp_path / "a", {(1, 0): {p: ([1.0], [2.0]) for p in POLICIES}})
    copy = _validation(tmp_path / "b", {(1, 0): {p: ([1.0], [2.0]) for p in POLICIES}})
    refused(capsys, main, [str(one), str(copy)], "seed 1, replay 0", "counted twice")


def test_validations_of_different_scenarios_are_refused(tmp_path, capsys):
    one = _validation(tmp_path / "a", {(1, 0): {p: ([1.0], [2.0]) for p in POLICIES}})
    other = _validation(tmp_path / "b", {(2, 0): {p: ([1.0], [2.0]) for p in POLICIES}}, 0.9)
    refused(capsys, main, [str(one), str(other)], "scenario differs")


@pytest.mark.parametrize(
    "policies",
    [[], "x", {"random": {"runs": []}}, {"random": {"runs": [{"seed": "1", "replay": 0}]}}],
)
def test_a_report_with_no_replays_or_of_another_shape_is_refused(tmp_path, capsys, policies):
    report = {"scenario": {"name": "tiers"}, "policies": policies}
    (tmp_path / "report.json").write_text(json.dumps(report))
    refused(capsys, main, [str(tmp_path)], "report.json", keeps=tmp_path)


@pytest.mark.parametrize(
    "text",
    ["", "arrival_s,ttft_s\n", "arrival_s,ttft_s\n0,fast\n", "arrival_s,ttft_s\n0,0\n"],
)
def test_a_table_without_positive_ttfts_is_refused(tmp_path, capsys, text):
    out = _validation(tmp_path / "a", {(1, 0): {p: ([1.0], [2.0]) for p in POLICIES}})
    (out / "seed-1" / "random-real.csv").write_text(text)
    refused(capsys, main, [str(out)], "random-real.csv", keeps=tmp_path)


def test_real_and_simulated_tables_of_different_lengths_are_refused(tmp_path, capsys):
    out = _validation(tmp_path / "a", {(1, 0): {p: ([1.0, 2.0], [2.0]) for p in POLICIES}})
    refused(capsys, main, [str(out)], "2 and 1 requests", keeps=tmp_path)
