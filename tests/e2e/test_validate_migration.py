"""calibration.validate's live migrations: the instances' two sides on a real model, the
books a migrating policy reads, and a real replay that migrates (slow)."""

import shutil
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from calibration.migration.model import ModelConfig, Transformer
from calibration.validate.command import _policies
from calibration.validate.compare import migrated, simulate
from calibration.validate.engine import Engine
from calibration.validate.scenario import Layout, Scenario, write_checkpoints
from calibration.validate.scheduler import Replay
from policies import get_policy
from policies.base import Move, Request, Running, Start
from sim.spec import ClusterConfig
from tests.validate_support import DERIVED, MB, books, cluster_config
from thaw_kernel.errors import InputError
from traces.writer import write_canonical

TINY = ModelConfig(layers=2, hidden=64, heads=4, kv_heads=2, vocab=256, max_positions=128)


class Outbox:
    """An engine's messages, as the scheduler would read them."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict]] = []

    def __call__(self, event: str, **fields: object) -> None:
        self.events.append((event, fields))

    def last(self, event: str) -> dict:
        return next(f for e, f in reversed(self.events) if e == event)

    def named(self, event: str) -> list[dict]:
        return [f for e, f in self.events if e == event]


@pytest.fixture(scope="module")
def model() -> Transformer:
    return Transformer.random(TINY, seed=3)


def engines(model: Transformer) -> tuple[Engine, Outbox, Engine, Outbox]:
    source_out, target_out = Outbox(), Outbox()
    return Engine(model, 4, source_out), source_out, Engine(model, 4, target_out), target_out


def steps(engine: Engine, n: int) -> None:
    for _ in range(n):
        engine.step()


def test_a_migrated_batch_finishes_on_the_target_with_all_its_output_tokens(model):
    source, source_out, target, target_out = engines(model)
    source.admit(0, 8, 30)
    source.admit(1, 5, 12)
    steps(source, 2 + 4)  # both prefills, then four steps of the batch
    source.snapshot(threshold=20, rounds=0, max_rounds=10)  # the first round: never a stop
    first = source_out.last("tokens")
    assert not first["stopped"] and first["new"] == (8 + 5) + 2 * 5
    target.recompute(first["requests"])
    assert target_out.last("recomputed")["tokens"] == first["new"]
    steps(source, 3)  # the source decodes meanwhile
    source.admit(2, 6, 4)  # arrived before the stop: not prefilled yet
    source.snapshot(threshold=20, rounds=1, max_rounds=10)
    final = source_out.last("tokens")
    assert final["stopped"] and final["new"] == 2 * 3  # fewer than 20: the source stops
    assert not source.busy()
    held = {h["request"]: h for h in final["requests"]}
    assert held[0]["generated"] == held[1]["generated"] == 1 + 4 + 3
    assert [h["request"] for h in final["waiting"]] == [2]
    target.adopt(final["requests"], final["waiting"])
    assert target_out.last("resumed")["requests"] == [0, 1]
    while target.busy():
        target.step()
    assert [f["request"] for f in target_out.named("first")] == [2]  # prefilled here
    done = {f["request"]: f["generated"] for f in target_out.named("done")}
    assert done == {0: 30, 1: 12, 2: 4}
    assert not source_out.named("done")


def test_the_cap_on_rounds_stops_the_source_however_many_tokens_came(model):
    source, source_out, _, _ = engines(model)
    source.admit(0, 8, 60)
    steps(source, 1 + 10)
    source.snapshot(threshold=1, rounds=0, max_rounds=2)
    steps(source, 10)
    source.snapshot(threshold=1, rounds=1, max_rounds=2)
    assert not source_out.last("tokens")["stopped"]
    steps(source, 10)
    source.snapshot(threshold=1, rounds=2, max_rounds=2)
    assert source_out.last("tokens")["stopped"]


def test_tokens_that_do_not_extend_what_the_target_holds_are_refused(model):
    _, _, target, _ = engines(model)
    handover = {"request": 0, "tokens": [1, 2, 3], "output": 5, "generated": 1}
    target.recompute([handover])
    with pytest.raises(ValueError, match="do not extend"):
        target.adopt([handover | {"tokens": [9, 2, 3, 4]}], [])


@pytest.fixture(scope="module")
def config(tmp_path_factory) -> ClusterConfig:
    return cluster_config(tmp_path_factory.mktemp("cluster"))


def test_a_round_costs_what_the_simulator_charges_from_the_profile(config):
    book, _ = books(config)
    # 4 bytes a token over the cluster's 1 GB/s, and "a"'s recompute: the profile's rate
    # scaled by its weights against the reference model's.
    per_token = 4 / 1e9 + (40 * MB / DERIVED["reference_model_bytes"]) / 2313.0
    cost = book.round_cost("a", 0, 1)
    assert cost.per_token_s == pytest.approx(per_token)
    assert (cost.fixed_s, cost.stop_tokens, cost.max_rounds) == (
        DERIVED["migration_fixed_s"],
        20,
        10,
    )


def test_the_migration_policy_moves_the_busy_instance_off_the_dram_holder(config):
    book, _ = books(config, servers=2)
    book.dram[0].admit("a", 40 * MB)
    book.free[0] -= 1
    book.reindex(0)
    busy = Running(7, "b", 1, 300.0, 2, 0.01)
    book.running_on = lambda server: [busy] if server == 0 else []
    policy = get_policy("migration")(np.random.default_rng(0))
    decision = policy.place(Request(0, "a", 0.0, 16, 8), book)
    assert decision == Start(0, migrate=(Move(7, 1),))


def test_each_side_counts_the_requests_it_migrated_and_their_pauses():
    frame = pd.DataFrame({"migrations": [0, 1, 2], "migration_pause_s": [0.0, 0.1, 0.3]})
    assert migrated(frame) == {"migrated_requests": 2, "migration_pause_s_median": 0.2}
    assert migrated(frame.iloc[:1]) == {"migrated_requests": 0, "migration_pause_s_median": None}


def test_the_command_accepts_migration_but_not_preemption():
    assert _policies("migration,locality") == ["migration", "locality"]
    with pytest.raises(InputError, match="preemption"):
        _policies("preemption")


# The replay that must migrate: instances stay warm (keep-alive 30 s), so arrivals meet
# them as planned whatever the start-ups take. "small" runs on server 0 first (its
# checkpoint stays in server 0's DRAM cache), then "large" takes server 0 and, once warm,
# four long requests; "small" comes back while they decode: its DRAM holder is busy and
# server 1 is free, so `migration` moves the busy "large" instance to server 1.
SCENARIO = Scenario(requests=7, rate=1.0, keep_alive_s=30.0)
TRACE = pd.DataFrame(
    {
        "arrival_s": [0.0, 6.0, 12.0, 12.01, 12.02, 12.03, 12.1],
        "model": ["small", "large", "large", "large", "large", "large", "small"],
        "input_tokens": [16] * 7,
        "output_tokens": [2, 2, 240, 240, 240, 240, 8],
    }
)
MOVED = [2, 3, 4, 5]


@pytest.mark.slow
def test_a_real_replay_migrates_the_busy_instance_and_its_requests_finish(tmp_path):
    shm = Path(tempfile.mkdtemp(prefix="thaw-validate-", dir="/dev/shm"))
    try:
        layout = Layout(tmp_path, shm)
        sizes = write_checkpoints(SCENARIO, layout)
        config = cluster_config(tmp_path, sizes, SCENARIO)
        rng = np.random.default_rng(0)
        replay = Replay(SCENARIO, layout, sizes, TRACE, "migration", rng, config)
        records = replay.run(limit_s=120.0)
    finally:
        shutil.rmtree(shm, ignore_errors=True)
    frame = records.frame()
    assert (frame["generated"] == TRACE["output_tokens"]).all()  # every token, moved or not
    assert frame["ttft_s"].notna().all()
    moved = frame.index[frame["migrations"] > 0].tolist()
    assert moved == MOVED, f"migrated {moved}: the large instance finished before it could move"
    assert (frame.loc[MOVED, "migration_pause_s"] > 0).all()
    assert (frame.loc[MOVED, "migration_rounds"] >= 1).all()
    instances = records.instances_frame()
    target = instances[(instances["model"] == "large") & (instances["server"] == 1)]
    assert len(target) == 1 and target["ready"].notna().all()
    assert frame.loc[6, "server"] == 0  # "small" started where its checkpoint was cached
    # The simulator, on the same trace and cluster, moves the same requests.
    write_canonical(TRACE.copy(), layout.trace)
    simulated, _ = simulate(layout, tmp_path / "profile.json", "migration", 0)
    assert simulated.index[simulated["migrations"] > 0].tolist() == MOVED
