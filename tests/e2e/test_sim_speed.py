"""benchmarks/sim_speed.py: each mechanism switch changes only what it names, and a cell
runs with all of them on."""

import json
import statistics
import subprocess
import sys

import pytest
import tomli_w

from sim.config import read_config
from thaw_kernel.stages import default_steps


@pytest.fixture
def sim_speed(repo_root, monkeypatch):
    monkeypatch.syspath_prepend(str(repo_root / "benchmarks"))
    import sim_speed

    return sim_speed


def read(sim_speed, tmp_path, **switches):
    path = tmp_path / "cluster.toml"
    flags = {"peer": False, "sleep": False, "ewl": False} | switches
    path.write_text(tomli_w.dumps(sim_speed.cluster(4, 8, **flags)))
    return read_config(path)


def run(repo_root, *args):
    """benchmarks/sim_speed.py with `args`, in a process of its own."""
    script = repo_root / "benchmarks" / "sim_speed.py"
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True)


def report(repo_root, *args):
    """Its `--json` report, where it must succeed."""
    done = run(repo_root, *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_ewl_puts_every_model_on_an_engine_of_the_default_start_up(sim_speed, tmp_path):
    plain, ewl = read(sim_speed, tmp_path), read(sim_speed, tmp_path, ewl=True)
    assert not plain.overlapped and list(ewl.models) == list(plain.models)
    for name, spec in ewl.models.items():
        assert ewl.pipelined(name)
        assert ewl.steps(name) == plain.steps(name) == default_steps(plain.instance_startup_s)
        assert spec.weights == plain.models[name].weights
    assert ewl.peer_loading is False and ewl.sleep is None


def test_peer_and_sleep_switch_on_their_mechanism_alone(sim_speed, tmp_path):
    peer, sleep = read(sim_speed, tmp_path, peer=True), read(sim_speed, tmp_path, sleep=True)
    assert peer.peer_loading and peer.sleep is None and not peer.overlapped
    assert sleep.sleep[""].level == 1 and sleep.keep_alive.text == "fixed:sleep=600"
    assert not sleep.peer_loading and not sleep.overlapped


def test_a_cell_runs_with_every_mechanism_on(repo_root):
    (cell,) = report(
        repo_root, "--requests", "300", "--servers", "2", "--policies", "startup-aware",
        "--peer", "--sleep", "--ewl",
    )["cells"]  # fmt: skip
    assert cell["mechanisms"] == ["peer", "sleep", "ewl"] and cell["requests"] == 300


def test_the_models_axis_generates_catalogs_and_compares_their_cost(repo_root):
    out = report(
        repo_root, "--requests", "200", "--servers", "2", "--models", "3,40",
        "--policies", "locality",
    )  # fmt: skip
    assert [cell["models"] for cell in out["cells"]] == [3, 40]
    (ratio,) = out["scaling"]
    assert ratio["axis"] == "models" and ratio["models"] == 40 and ratio["cost_ratio"] > 0


def test_trace_models_holds_the_requests_while_the_catalog_grows(repo_root):
    small, big = report(
        repo_root, "--requests", "200", "--servers", "2", "--models", "3,40",
        "--trace-models", "3", "--policies", "locality",
    )["cells"]  # fmt: skip
    assert (small["models"], big["models"]) == (3, 40)
    assert small["trace_models"] == big["trace_models"] == 3
    # The same three models, sized and placed alike (the 40-model catalog leaves later
    # models to the remote store): the same run.
    assert small["ttft_p99_s"] == big["ttft_p99_s"]
    assert small["loads_by_tier"] == big["loads_by_tier"]


def _git(repo_root, *args):
    return subprocess.run(["git", "-C", str(repo_root), *args], capture_output=True, text=True)


def test_against_a_revision_runs_every_round_there_too_and_removes_its_worktree(repo_root):
    head = _git(repo_root, "rev-parse", "HEAD")
    if head.returncode:
        pytest.skip("not a git checkout")
    worktrees = _git(repo_root, "worktree", "list").stdout
    (cell,) = report(
        repo_root, "--requests", "200", "--servers", "2", "--policies", "locality",
        "--rounds", "2", "--against", "HEAD",
    )["cells"]  # fmt: skip
    theirs = cell["against"]
    assert theirs["revision"] == "HEAD" and theirs["commit"] == head.stdout.strip()
    assert len(cell["round_requests_per_wall_s"]) == len(theirs["round_requests_per_wall_s"]) == 2
    assert cell["requests_per_wall_s"] == statistics.median(cell["round_requests_per_wall_s"])
    assert theirs["speedup"] == pytest.approx(
        cell["requests_per_wall_s"] / theirs["requests_per_wall_s"]
    )
    assert _git(repo_root, "worktree", "list").stdout == worktrees


def test_an_unknown_revision_is_one_line_and_exit_status_2(repo_root):
    if _git(repo_root, "rev-parse", "HEAD").returncode:
        pytest.skip("not a git checkout")
    done = run(repo_root, "--requests", "200", "--servers", "2", "--against", "no-such-revision")
    assert done.returncode == 2 and not done.stdout
    assert done.stderr.strip().splitlines() == [
        f"sim_speed.py: --against: no-such-revision: no such revision in {repo_root.resolve()}"
    ]
