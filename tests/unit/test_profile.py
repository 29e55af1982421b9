"""Hardware profiles: checked field by field, and laid over the cluster's numbers."""

import json
import re
from pathlib import Path

import pytest
from conftest import GiB, simulate, tiny_config

from sim.config import read_config
from thaw_kernel.errors import InputError

DERIVED = {
    "ssd_read_bytes_per_s": 2 * GiB,
    "dram_to_gpu_bytes_per_s": 16 * GiB,
    "instance_startup_s": 2.0,
    "reference_model_bytes": 4 * GiB,
    "decode_step_s": 0.125,
    "decode_step_per_request_s": 0.0,
    "recompute_tokens_per_s": 1024.0,
    "migration_fixed_s": 0.01,
    "migration_per_token_s": 0.001,
}


def write(tmp_path, derived=None, **top):
    document = {"version": 1, "machine": {"description": "test"}, "derived": derived or DERIVED}
    document.update(top)
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(document))
    return path


def ssd_load_s(tmp_path, ssd_read: float) -> float:
    """A one-request run's checkpoint load from SSD, under a profile with that bandwidth."""
    profile = write(tmp_path, {**DERIVED, "ssd_read_bytes_per_s": ssd_read})
    config = read_config(
        tiny_config(tmp_path, ssd_a="[0]").resolved and tmp_path / "tiny.toml", profile
    )
    sim = simulate(config, [(0.0, "a", 512, 1)])
    return sim.table.startup_s[0] - config.instance_startup_s


def test_doubling_the_ssd_bandwidth_halves_a_cold_load_from_ssd(tmp_path):
    assert ssd_load_s(tmp_path, 2 * GiB) == 2.0  # 4 GiB at 2 GiB/s
    assert ssd_load_s(tmp_path, 4 * GiB) == 1.0


def test_speeds_scale_from_the_reference_model_by_weights_per_gpu(tmp_path):
    extra = '\n[models.big]\nweights = "16GiB"\ngpus = 2\nprefill_tokens_per_s = 1.0\n'
    extra += "decode_step_s = 1.0\n"
    tiny_config(tmp_path, extra=extra)
    config = read_config(tmp_path / "tiny.toml", write(tmp_path))
    big = config.models["big"]  # 8 GiB per GPU: twice the reference's 4 GiB
    assert big.decode_step_s == 0.25 and big.prefill_tokens_per_s == 512.0
    assert config.servers[0].pcie == 16 * GiB
    assert config.migration.round_overhead_s == 0.01
    assert "models.big.decode_step_s" in config.resolved["profile"]["applied"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"version": 7}, "version: expected 1 or 2"),
        ({"derived": {**DERIVED, "ssd_read_bytes_per_s": -1}}, "derived.ssd_read_bytes_per_s"),
        ({"derived": {k: v for k, v in DERIVED.items() if k != "decode_step_s"}}, "missing"),
        ({"derived": {**DERIVED, "warp_factor": 9}}, "derived.warp_factor: unknown key"),
        ({"machine": {}}, "machine.description"),
        (
            {
                "measurements": {
                    "ssd": {
                        "n": 3,
                        "median": 5,
                        "min": 6,
                        "max": 7,
                        "unit": "B/s",
                        "page_cache_possible": False,
                    }
                }
            },
            "min <= median <= max",
        ),
    ],
)
def test_bad_profiles_name_the_file_and_key(tmp_path, change, message):
    path = write(
        tmp_path,
        **{k: v for k, v in change.items() if k != "derived"},
        derived=change.get("derived"),
    )
    with pytest.raises(InputError, match=message) as err:
        read_config(None, path)
    assert str(path) in str(err.value)


def test_a_profile_that_is_not_json_is_refused(tmp_path):
    path = tmp_path / "p.json"
    path.write_text("{not json")
    with pytest.raises(InputError, match="invalid JSON"):
        read_config(None, path)


def test_the_shipped_gpu_server_profile_loads(repo_root):
    config = read_config(None, repo_root / "calibration" / "profiles" / "a100-pcie-server.json")
    assert config.servers[0].ssd_read == 7.0e9


def test_the_shipped_measured_profile_loads_and_says_where_it_was_measured(repo_root):
    path = repo_root / "calibration" / "profiles" / "dev-vm-cpu.json"
    document = json.loads(path.read_text())
    assert "Measured by `python -m calibration.measure" in document["machine"]["description"]
    config = read_config(None, path)
    assert config.servers[0].ssd_read == document["derived"]["ssd_read_bytes_per_s"]


V2 = {**DERIVED, "startup_cpu_s": 1.5, "host_cores": 2.0}


def test_a_version_1_profile_still_loads_and_adds_no_engine(tmp_path):
    tiny_config(tmp_path)
    config = read_config(tmp_path / "tiny.toml", write(tmp_path))
    assert config.engines is None and config.servers[0].host_cores == 32


def test_a_version_2_profile_creates_the_measured_engine_and_round_trips(tmp_path):
    tiny_config(tmp_path, ssd_a="[0]")
    config = read_config(tmp_path / "tiny.toml", write(tmp_path, V2, version=2))
    assert config.servers[0].host_cores == 2
    assert config.models["a"].engine == "measured"
    kinds = [(s.name, s.kind, s.amount) for step in config.steps("a") for s in step]
    assert kinds == [("startup", "fixed", 0.5), ("startup-cpu", "cpu", 1.5), ("load", "load", 0.0)]
    # Alone, the start-up is the measured 2 s, then 4 GiB from SSD at 2 GiB/s.
    assert simulate(config, [(0.0, "a", 512, 1)]).table.startup_s[0] == 2.0 + 2.0
    resolved = tmp_path / "resolved.toml"
    resolved.write_text(config.to_toml())
    again = read_config(resolved)
    assert again.engines == config.engines and again.models == config.models


def test_a_profiles_warm_up_is_a_fixed_stage_after_the_load(tmp_path):
    tiny_config(tmp_path, ssd_a="[0]")
    profile = write(tmp_path, {**V2, "warmup_s": 0.25}, version=2)
    config = read_config(tmp_path / "tiny.toml", profile)
    kinds = [(s.name, s.kind, s.amount) for step in config.steps("a") for s in step]
    assert kinds[-2:] == [("load", "load", 0.0), ("warmup", "fixed", 0.25)]
    # Alone: the measured 2 s, then 4 GiB from SSD at 2 GiB/s, then the warm-up.
    assert simulate(config, [(0.0, "a", 512, 1)]).table.startup_s[0] == 2.0 + 2.0 + 0.25


def test_a_profile_s_host_disk_is_laid_over_every_group(tmp_path):
    tiny_config(tmp_path)
    profile = write(tmp_path, {**V2, "host_disk_bytes_per_s": 3 * GiB}, version=2)
    config = read_config(tmp_path / "tiny.toml", profile)
    assert config.servers[0].host_disk == 3 * GiB
    assert "servers[0].host_disk" in config.resolved["profile"]["applied"]
    without = read_config(tmp_path / "tiny.toml", write(tmp_path, V2, version=2))
    assert without.servers[0].host_disk == 0.0
    assert config.servers[0].host_disk_shared == without.servers[0].host_disk_shared == 0.0


def test_a_shared_disk_rate_without_the_disk_s_is_refused_by_key(tmp_path):
    profile = write(tmp_path, {**V2, "host_disk_shared_bytes_per_s": GiB}, version=2)
    message = re.escape("derived.host_disk_shared_bytes_per_s: needs host_disk_bytes_per_s")
    with pytest.raises(InputError, match=message) as err:
        read_config(None, profile)
    assert str(profile) in str(err.value)


def test_a_profile_s_shared_disk_rate_is_laid_over_every_group(tmp_path):
    tiny_config(tmp_path)
    derived = {**V2, "host_disk_bytes_per_s": 3 * GiB, "host_disk_shared_bytes_per_s": 2 * GiB}
    config = read_config(tmp_path / "tiny.toml", write(tmp_path, derived, version=2))
    assert config.servers[0].host_disk_shared == 2 * GiB
    assert "servers[0].host_disk_shared" in config.resolved["profile"]["applied"]


def test_a_profile_s_start_up_slowdown_in_company_is_laid_over_every_group(tmp_path):
    tiny_config(tmp_path)
    profile = write(tmp_path, {**V2, "startup_company_slowdown": 0.08}, version=2)
    config = read_config(tmp_path / "tiny.toml", profile)
    assert config.servers[0].startup_company_slowdown == 0.08
    assert "servers[0].startup_company_slowdown" in config.resolved["profile"]["applied"]
    without = read_config(tmp_path / "tiny.toml", write(tmp_path, V2, version=2))
    assert without.servers[0].startup_company_slowdown == 0.0


def test_a_profiles_fixed_prefill_part_scales_as_the_decode_step(tmp_path):
    extra = '\n[models.big]\nweights = "16GiB"\ngpus = 2\nprefill_tokens_per_s = 1.0\n'
    extra += "decode_step_s = 1.0\n"
    tiny_config(tmp_path, extra=extra)
    profile = write(tmp_path, {**V2, "prefill_fixed_s": 0.125}, version=2)
    config = read_config(tmp_path / "tiny.toml", profile)
    big = config.models["big"]  # twice the reference's weights per GPU: a pass twice as long
    assert big.prefill_fixed_s == 0.25 and big.prefill_s(512) == 0.25 + 1.0
    assert "models.big.prefill_fixed_s" in config.resolved["profile"]["applied"]
    without = read_config(tmp_path / "tiny.toml", write(tmp_path, V2, version=2))
    assert without.models["big"].prefill_fixed_s == 0.0


@pytest.mark.parametrize(
    ("version", "derived", "message"),
    [
        (2, DERIVED, "derived.startup_cpu_s: missing"),
        (1, V2, "derived.startup_cpu_s: unknown key (in a version 1 profile)"),
        (1, {**DERIVED, "warmup_s": 0.1}, "derived.warmup_s: unknown key (in a version 1"),
        (2, {**V2, "warmup_s": -0.1}, "derived.warmup_s: expected a non-negative number"),
        (2, {**V2, "host_cores": 0}, "derived.host_cores: expected a positive number"),
        (2, {**V2, "host_cores": 2e6}, "derived.host_cores: expected 0.01 to 1000000"),
        (2, {**V2, "host_cores": 0.001}, "derived.host_cores: expected 0.01 to 1000000"),
        (2, {**V2, "startup_cpu_s": 3.0}, "derived.startup_cpu_s: more than"),
        (2, {**V2, "startup_company_slowdown": -0.1}, "slowdown: expected a non-negative"),
        (2, {**V2, "startup_company_slowdown": 11}, "slowdown: expected at most 10 "),
        (3, V2, "version: expected 1 or 2, got 3"),
    ],
)
def test_version_2_fields_are_checked(tmp_path, version, derived, message):
    tiny_config(tmp_path)
    with pytest.raises(InputError, match=re.escape(message)):
        read_config(tmp_path / "tiny.toml", write(tmp_path, derived, version=version))


def test_inference_speeds_scale_by_the_bytes_a_forward_pass_reads(tmp_path):
    """A checkpoint that carries bytes it does not compute with (`compute_bytes`) loads
    all of them, but decodes and prefills at the speed of the bytes it computes with."""
    catalog = """
[models.a]
weights = "8GiB"
gpus = 1
prefill_tokens_per_s = 1000.0
decode_step_s = 0.5
ssd_servers = [0]
"""
    cluster = tmp_path / "ballast.toml"
    cluster.write_text(catalog + 'compute_bytes = "2GiB"\n')
    plain = tmp_path / "plain.toml"
    plain.write_text(catalog)
    profile = write(tmp_path)
    carried, whole = read_config(cluster, profile), read_config(plain, profile)
    assert carried.models["a"].weights == whole.models["a"].weights == 8 * GiB
    # The reference model is 4 GiB: a forward pass over 2 GiB is half its step, 8 GiB twice.
    assert carried.models["a"].decode_step_s == DERIVED["decode_step_s"] / 2
    assert whole.models["a"].decode_step_s == DERIVED["decode_step_s"] * 2
    assert carried.models["a"].prefill_tokens_per_s == DERIVED["recompute_tokens_per_s"] * 2
    assert "compute_bytes" not in whole.to_toml()


def test_compute_bytes_cannot_exceed_the_weights(tmp_path):
    cluster = tmp_path / "c.toml"
    cluster.write_text(
        '[models.a]\nweights = "1GiB"\ngpus = 1\nprefill_tokens_per_s = 1000.0\n'
        'decode_step_s = 0.5\ncompute_bytes = "2GiB"\n'
    )
    with pytest.raises(InputError, match=r"models\.a\.compute_bytes: more than the model's"):
        read_config(cluster)


def _beside(tmp_path: Path) -> None:
    """TINY with its loads beside the start-up."""
    path = tmp_path / "tiny.toml"
    path.write_text("load_beside_startup = true\n" + path.read_text())


def test_with_load_beside_startup_the_measured_engine_loads_while_it_starts(tmp_path):
    tiny_config(tmp_path, ssd_a="[0]")
    _beside(tmp_path)
    config = read_config(tmp_path / "tiny.toml", write(tmp_path, V2, version=2))
    steps = [[(s.name, s.kind) for s in step] for step in config.steps("a")]
    assert steps == [
        [("startup", "fixed"), ("startup-cpu", "cpu"), ("load", "load")],
        [("copy", "copy")],
    ]
    # Alone: 4 GiB from SSD into host memory at 2 GiB/s (2 s) beside the start-up (0.5 s
    # fixed beside 1.5 CPU-seconds): the longer of the two, not their sum; then the
    # engine's copy onto its GPU at the profile's 16 GiB/s (0.25 s).
    assert simulate(config, [(0.0, "a", 512, 1)]).table.startup_s[0] == 2.0 + 0.25
    again = read_config(_resolved(tmp_path, config))
    assert again.load_beside_startup and again.engines == config.engines


def test_with_load_beside_startup_the_default_start_up_overlaps_the_load(tmp_path):
    tiny_config(tmp_path, ssd_a="[0]")
    plain = read_config(tmp_path / "tiny.toml")
    _beside(tmp_path)
    beside = read_config(tmp_path / "tiny.toml")
    assert [len(step) for step in plain.steps("a")] == [1, 1]
    assert [len(step) for step in beside.steps("a")] == [2, 1]
    row = [(0.0, "a", 512, 1)]
    # Plain: 2 s, then 4 GiB from SSD at 2 GiB/s onto the GPU. Beside: the 2 s beside
    # the same read into host memory, then the copy at 4 GiB/s.
    assert simulate(plain, row).table.startup_s[0] == 2.0 + 2.0
    assert simulate(beside, row).table.startup_s[0] == 2.0 + 1.0


def test_load_beside_startup_must_be_a_boolean(tmp_path):
    tiny_config(tmp_path)
    path = tmp_path / "tiny.toml"
    path.write_text('load_beside_startup = "yes"\n' + path.read_text())
    with pytest.raises(InputError, match="load_beside_startup: "):
        read_config(path)


def _resolved(tmp_path: Path, config) -> Path:
    resolved = tmp_path / "resolved.toml"
    resolved.write_text(config.to_toml())
    return resolved
