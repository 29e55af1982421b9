"""The bad-input corpus (tests/data/bad/): every file is refused through the CLI with one
line on stderr naming the file and the line or key, exit status 2, and nothing written.

Files are named by what they are given as: `trace-*` to --trace, `config-*` to
--cluster, `profile-*` to --profile of `python -m sim run`; `checkpoint-*` (directories)
to `python -m calibration.verify`.
"""

from pathlib import Path

import pytest
from refusal import refused

from calibration.checkpoint.verify import main as verify
from sim.runner.cli import main

BAD = Path(__file__).parents[1] / "data" / "bad"

# The part of each message that says where the problem is (a line, a key, or what).
WHERE = {
    "trace-2024-bad-timestamp.csv": "line 4: TIMESTAMP",
    "trace-2025-negative-images.csv": "line 3: NumImages",
    "trace-bad-timestamp.csv": "line 3: TIMESTAMP",
    "trace-binary-garbage.csv": "not a text CSV file",
    "trace-empty-field.csv": "line 3: input_tokens",
    "trace-empty.csv": "the file is empty",
    "trace-functions-2019-negative-count.csv": "line 3: minute 2",
    "trace-functions-2021-negative-duration.csv": "line 3: duration",
    "trace-header-only.csv": "no rows after the header",
    "trace-missing-column.csv": "line 1: missing column(s) output_tokens",
    "trace-nan-arrival.csv": "line 3: arrival_s",
    "trace-negative-tokens.csv": "line 2: ContextTokens",
    "trace-non-numeric-tokens.csv": "line 3: ContextTokens",
    "trace-not-parquet.parquet": "not a readable Parquet file",
    "trace-processed-negative-arrival.csv": "line 3: arrived_at",
    "trace-ragged-row.csv": "line 3: expected 4 fields",
    "trace-semicolon-delimiter.csv": "line 1: wrong delimiter",
    "trace-unknown-header.csv": "line 1: unrecognised header",
    "trace-unknown-model.csv": "line 3: model 'gpt-17' is not in the catalog",
    "trace-zero-tokens.csv": "line 3: output_tokens",
    "config-bad-migration.toml": "migration.max_rounds",
    "config-empty-catalog.toml": "models: the catalog is empty",
    "config-engine-zero-cpu.toml": "engines.e.stages[1].cpu_seconds: expected a positive",
    "config-execute-while-load-not-last.toml": "engines.e.execute_while_load: needs the load",
    "config-sleep-level.toml": "sleep.level: expected 1 or 2",
    "config-zero-host-cores.toml": "servers[0].host_cores: expected a positive number",
    "config-invalid-toml.toml": "invalid TOML",
    "config-missing-model-key.toml": "models.m.prefill_tokens_per_s: missing",
    "config-model-too-big.toml": "models.giant: needs 4 GPUs",
    "config-negative-size.toml": "servers[0].dram",
    "config-no-servers.toml": "servers: expected at least one",
    "config-ssd-overfull.toml": "models.c: the checkpoints placed on server 0",
    "config-unknown-key.toml": "keep_alive_secs: unknown key",
    "config-wrong-type.toml": "servers[0].gpus",
    "config-zero-bandwidth.toml": "servers[0].network",
    "config-zero-servers.toml": "servers[0].count",
    "config-peer-zero-compute-network.toml": "servers[0].compute_network: expected a positive",
    "config-peer-switch-not-a-flag.toml": "peer_loading: expected true or false",
    "profile-bad-measurement.json": "measurements.ssd_read",
    "profile-invalid-json.json": "invalid JSON",
    "profile-missing-field.json": "derived.decode_step_s: missing",
    "profile-negative-bandwidth.json": "derived.ssd_read_bytes_per_s",
    "profile-not-an-object.json": "expected an object",
    "profile-string-number.json": "derived.instance_startup_s",
    "profile-wrong-version.json": "version: expected 1",
    "profile-zero-recompute.json": "derived.recompute_tokens_per_s",
    "checkpoint-corrupt-index": "index.json: bad JSON",
    "checkpoint-corrupted-byte": "tensors.bin: tensor 'model.embed_tokens.weight' is corrupted",
    "checkpoint-offset-out-of-bounds": "'lm_head.weight': bytes 16384..24576 lie past the end",
    "checkpoint-overlapping-tensors": "overlap",
    "checkpoint-truncated-blob": "tensors.bin: truncated",
    "checkpoint-unknown-dtype": "unknown dtype 'float7'",
    # Hostile and careless input: beyond every bound, nested, duplicated, not a file.
    "config-billion-servers.toml": "servers[0].count: expected at most 100000",
    "config-infinite-dram.toml": "servers[0].dram: expected a finite size",
    "config-huge-batch.toml": "models.m.max_batch: expected at most",
    "config-startup-beyond-the-clock.toml": "instance_startup_s: expected a number from 0 to",
    "config-tiny-bandwidth.toml": "servers[0].network: expected a bandwidth from",
    "config-nested-deeply.toml": "invalid TOML: nested too deeply",
    "trace-tokens-beyond-2-63.csv": "line 3: input_tokens must be an integer >= 1 and <=",
    "trace-arrival-beyond-the-clock.csv": "line 3: arrival_s must be a number >= 0 and <=",
    "trace-microsecond-stamps-as-seconds.csv": "line 2: arrived_at must be a number",
    "trace-duplicated-column.csv": "line 1: column 'model' appears twice",
    "trace-functions-2019-minute-twice.csv": "line 1: column '2' appears twice",
    "profile-duplicate-key.json": "duplicate key 'version'",
    "profile-nested-deeply.json": "nested too deeply",
    "checkpoint-blob-is-a-directory": "tensors.bin: is a directory",
    "checkpoint-index-with-nan": "NaN is not a JSON number",
}
FLAG = {"trace": "--trace", "config": "--cluster", "profile": "--profile"}


def test_the_corpus_is_complete():
    assert sorted(p.name for p in BAD.iterdir()) == sorted(WHERE)
    assert len(WHERE) >= 40


@pytest.mark.parametrize("name", sorted(n for n in WHERE if not n.startswith("checkpoint-")))
def test_bad_input_is_refused_in_one_line(tmp_path, capsys, name):
    out = tmp_path / "run"
    flag = FLAG[name.split("-")[0]]
    argv = ["run", flag, str(BAD / name), "--out", str(out), "--quiet"]
    err = refused(capsys, main, argv, str(BAD / name), WHERE[name], keeps=tmp_path)
    assert err.startswith("python -m sim run: error: ")


@pytest.mark.parametrize("name", sorted(n for n in WHERE if n.startswith("checkpoint-")))
def test_a_bad_checkpoint_is_refused_in_one_line(capsys, name):
    err = refused(capsys, verify, [str(BAD / name)], str(BAD / name), WHERE[name], keeps=BAD / name)
    assert err.startswith("python -m calibration.verify: error: ")
