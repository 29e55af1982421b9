"""Token migration between two processes: the request continues exactly where it left off."""

import itertools
import multiprocessing
import pickle

import pytest
import torch

from calibration.migration.model import ModelConfig, Transformer, greedy, save_model
from calibration.migration.token_migration import Destination, _serve, migrate

CONFIG = ModelConfig(layers=2, hidden=64, heads=4, kv_heads=2, vocab=256, max_positions=512)
PROMPT = [3, 141, 59, 26, 5, 35, 89, 79, 32, 38, 46, 26, 43, 38, 32, 79, 50, 28, 84, 19]
# Greedy decoding of this seeded model over these 300 tokens never has its two best
# logits closer than 1e-4; fp32 prefill and decode paths differ by about 1e-6, so exact
# equality of the tokens is a property of the code here, not a lucky rounding.
NEW_TOKENS = 300


@pytest.fixture(scope="module")
def model() -> Transformer:
    return Transformer.random(CONFIG, seed=11)


@pytest.fixture(scope="module")
def reference(model) -> list[int]:
    return greedy(model, PROMPT, NEW_TOKENS)


@pytest.fixture(scope="module")
def destination(model, tmp_path_factory):
    checkpoint = tmp_path_factory.mktemp("migration") / "ckpt"
    save_model(model, checkpoint)
    # One thread each: source and destination share this machine's cores.
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    with Destination(CONFIG, checkpoint, threads=1) as replica:
        yield replica
    torch.set_num_threads(previous)


def consistent(record, prompt_length: int) -> None:
    """Each message carries the whole sequence; the destination recomputes only what is new."""
    messages = [*record.rounds, record.final]
    assert messages[0].recomputed == messages[0].tokens_sent
    for before, after in itertools.pairwise(messages):
        assert after.tokens_sent == before.tokens_sent + before.generated
        assert after.recomputed == before.generated
        assert after.bytes_sent >= before.bytes_sent > 0
    assert record.final.tokens_sent == prompt_length + len(record.source_tokens)
    assert record.final.generated == 0
    assert 0 < record.pause_s <= record.total_s


def test_the_destination_continues_with_the_tokens_the_source_would_have_produced(
    model, reference, destination
):
    record = migrate(model, PROMPT, destination, new_tokens=NEW_TOKENS, start_after=10)
    assert list(record.tokens) == reference
    assert len(record.source_tokens) >= 10 and record.destination_tokens
    assert 1 <= len(record.rounds) <= 8
    consistent(record, len(PROMPT))


def test_a_timed_stop_and_copy_leaves_the_destination_ready_for_a_migration(
    model, reference, destination
):
    assert destination.stop_and_copy(list(range(100))) > 0  # then its cache is emptied
    record = migrate(model, PROMPT, destination, new_tokens=NEW_TOKENS, start_after=3)
    assert list(record.tokens) == reference


def test_a_large_threshold_stops_after_one_round(model, reference, destination):
    record = migrate(
        model, PROMPT, destination, new_tokens=NEW_TOKENS, start_after=5, threshold=10**6
    )
    assert len(record.rounds) == 1
    assert record.rounds[0].tokens_sent == len(PROMPT) + 5
    assert list(record.tokens) == reference
    consistent(record, len(PROMPT))


def test_a_threshold_never_met_runs_the_rounds_to_the_cap(model, reference, destination):
    record = migrate(model, PROMPT, destination, new_tokens=NEW_TOKENS, threshold=0, max_rounds=4)
    assert len(record.rounds) == 4
    assert list(record.tokens) == reference
    consistent(record, len(PROMPT))


def test_a_source_at_its_last_token_waits_and_leaves_it_to_the_destination(
    model, reference, destination
):
    record = migrate(model, PROMPT, destination, new_tokens=40, start_after=39)
    assert len(record.source_tokens) == 39 and len(record.destination_tokens) == 1
    assert record.rounds[0].generated == 0 and record.final.recomputed == 0
    assert list(record.tokens) == reference[:40]


def test_bad_arguments_are_refused(model, destination):
    with pytest.raises(ValueError, match="start_after"):
        migrate(model, PROMPT, destination, new_tokens=10, start_after=10)
    with pytest.raises(ValueError, match="max_rounds"):
        migrate(model, PROMPT, destination, new_tokens=10, max_rounds=0)


def test_a_destination_that_cannot_load_reports_why(tmp_path):
    ours, theirs = multiprocessing.Pipe()
    _serve(theirs, CONFIG, tmp_path / "missing", "cpu", None)
    kind, body = pickle.loads(ours.recv_bytes())
    assert kind == "error" and "missing" in body


@pytest.mark.cuda
def test_migration_onto_a_gpu_continues_identically(tmp_path):
    """Source on the first GPU, destination on the last (the same one where there is one)."""
    model = Transformer.random(CONFIG, seed=11, device="cuda:0")
    save_model(model, tmp_path / "ckpt")
    last = f"cuda:{torch.cuda.device_count() - 1}"
    with Destination(CONFIG, tmp_path / "ckpt", device=last) as replica:
        record = migrate(model, PROMPT, replica, new_tokens=NEW_TOKENS, start_after=10)
    assert list(record.tokens) == greedy(model, PROMPT, NEW_TOKENS)
    consistent(record, len(PROMPT))
