"""The invariant checker catches broken books, naming the event and the time."""

import pytest
from conftest import simulate, tiny_config

from sim.engine.invariants import InvariantError
from sim.model.cache import CheckpointCache
from sim.model.cluster import Cluster
from sim.runner.cli import main

ROWS = [(0.0, "a", 512, 20), (1.0, "b", 512, 20), (30.0, "a", 512, 5)]


def test_a_correct_run_passes_every_audit(tmp_path):
    for policy in ("locality", "migration", "startup-aware", "preemption"):
        simulate(tiny_config(tmp_path, ssd_a="[0]"), ROWS, policy, check=True)


def test_an_index_left_stale_is_caught_after_the_event_that_broke_it(tmp_path, monkeypatch):
    monkeypatch.setattr(Cluster, "_reindex", lambda self, server: None)
    with pytest.raises(InvariantError, match=r"after .*: t=.*server 0: indexed under the wrong"):
        simulate(tiny_config(tmp_path), ROWS, check=True)


def test_gpus_booked_twice_are_caught(tmp_path, monkeypatch):
    def leak(self, instance):
        self.servers[instance.server].free_gpus += 1  # a GPU appears from nowhere

    monkeypatch.setattr(Cluster, "mark_idle", lambda self, i: (leak(self, i), None)[1])
    with pytest.raises(InvariantError, match="free GPUs"):
        simulate(tiny_config(tmp_path), ROWS, check=True)


def test_the_cli_reports_a_violation_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(Cluster, "_reindex", lambda self, server: None)
    status = main(["run", "--check", "--quiet", "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert status == 1 and err.count("\n") == 1 and "invariant violated: after" in err
    assert not (tmp_path / "run").exists()


def test_a_pin_left_behind_by_a_load_is_caught(tmp_path, monkeypatch):
    monkeypatch.setattr(CheckpointCache, "unpin", lambda self, model: None)
    with pytest.raises(InvariantError, match="pins"):
        simulate(tiny_config(tmp_path, ssd_a="[0]"), ROWS, check=True)
