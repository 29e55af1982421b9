"""Generated catalogs (`[catalog]`, `--models`): sizes drawn as stated, every other figure
derived by the bundled catalog's rules, placement by popularity while the SSDs have room,
and every bad value refused naming its key, file or line."""

import re
import tomllib
from pathlib import Path

import numpy as np
import pytest
from refusal import refused

import traces
from sim.config import read_config
from sim.engine.simulator import Simulation
from sim.runner.cli import main
from thaw_kernel import seeds
from thaw_kernel.errors import InputError
from traces.generate import synthesize

A40 = 696e9  # GB/s of memory bandwidth, the default's
TENSOR = 150e12  # FLOP/s fp16 dense, the default's
PROFILES = Path(__file__).parents[2] / "calibration" / "profiles"


def cluster(tmp_path, text: str):
    path = tmp_path / "cluster.toml"
    path.write_text(text)
    return path


def test_a_models_figures_follow_from_its_size_by_the_bundled_rules(tmp_path):
    path = cluster(tmp_path, "[catalog]\nmodels = 40\nparameters = [7e9, 70e9]\n")
    models = read_config(path).models
    sizes = {spec.weights for spec in models.values()}
    assert sizes == {14_000_000_000, 140_000_000_000}  # fp16: 2 bytes a parameter
    small = next(spec for spec in models.values() if spec.weights == 14e9)
    big = next(spec for spec in models.values() if spec.weights == 140e9)
    # 14 GB fits one 48 GB GPU; 140 GB needs three, so the next power of two: four.
    assert (small.gpus, big.gpus) == (1, 4)
    assert small.decode_step_s == pytest.approx(14e9 / (0.6 * A40))
    assert big.decode_step_s == pytest.approx(140e9 / 4 / (0.6 * A40))
    assert small.prefill_tokens_per_s == pytest.approx(0.4 * TENSOR / (2 * 7e9))
    assert big.prefill_tokens_per_s == pytest.approx(4 * 0.4 * TENSOR / (2 * 70e9))
    assert big.decode_step_per_request_s == pytest.approx(0.03 * big.decode_step_s)
    assert small.max_batch == 16


def test_the_rules_give_back_the_bundled_catalog_from_its_parameter_counts(tmp_path):
    # The bundled models' parameter counts (their model cards), listed in a file: the same
    # GPUs, and speeds within the bundled file's rounding (its weights are the cards'
    # exact bytes, where the rules take 2 bytes a parameter).
    counts = {
        "opt-6.7b": 6.7e9, "llama-2-7b": 6.74e9, "opt-13b": 12.85e9, "llama-2-13b": 13.0e9,
        "opt-30b": 30e9, "opt-66b": 65.7e9, "llama-2-70b": 69e9,
    }  # fmt: skip
    listing = "name,parameters\n" + "".join(f"{n},{p}\n" for n, p in counts.items())
    (tmp_path / "hub.csv").write_text(listing)
    generated = read_config(cluster(tmp_path, '[catalog]\nfile = "hub.csv"\n')).models
    bundled = read_config().models
    assert list(generated) == list(bundled)
    for name, spec in bundled.items():
        made = generated[name]
        assert made.gpus == spec.gpus, name
        assert made.weights == pytest.approx(spec.weights, rel=0.02), name
        assert made.decode_step_s == pytest.approx(spec.decode_step_s, rel=0.05), name
        assert made.prefill_tokens_per_s == pytest.approx(spec.prefill_tokens_per_s, rel=0.05)


def test_a_seed_fixes_the_draws_and_the_shares_weight_them(tmp_path):
    text = "[catalog]\nmodels = 2000\nparameters = [7e9, 13e9]\nshares = [3, 1]\nseed = {}\n"
    first = read_config(cluster(tmp_path, text.format(1))).models
    again = read_config(cluster(tmp_path, text.format(1))).models
    other = read_config(cluster(tmp_path, text.format(2))).models
    assert first == again and first != other
    assert list(first)[:3] == ["m0000", "m0001", "m0002"] and len(first) == 2000
    small = sum(spec.weights == 14e9 for spec in first.values())
    # Binomial(2000, 0.75): mean 1,500, standard deviation 19.4; 1,400-1,600 is 5 sigma.
    assert 1400 < small < 1600


def test_the_ssds_fill_by_popularity_and_the_tail_stays_remote(tmp_path):
    # Four servers of 100 GB SSD, two copies of 14 GB each: model k on servers 2k, 2k+1
    # (mod 4), so every server takes every other model; seven copies fill 98 GB, and
    # models 0-13 are placed, 14 and later not.
    text = '[[servers]]\ncount = 4\nssd = "100GB"\n[catalog]\nmodels = 30\nparameters = [7e9]\n'
    models = list(read_config(cluster(tmp_path, text)).models.values())
    assert [spec.ssd_servers for spec in models[:3]] == [(0, 1), (2, 3), (0, 1)]
    assert all(spec.ssd_servers for spec in models[:14])
    assert not any(spec.ssd_servers for spec in models[14:])


def test_the_command_line_generates_a_hub_over_the_clusters_catalog_table(tmp_path, capsys):
    path = cluster(tmp_path, "[catalog]\nmodels = 5\nparameters = [13e9]\nseed = 4\n")
    assert len(read_config(path, models=300).models) == 300
    assert {spec.weights for spec in read_config(path, models=300).models.values()} == {26e9}
    assert len(read_config(models=50).models) == 50  # over the bundled cluster
    out = tmp_path / "run"
    argv = ["run", "--models", "200", "--max-requests", "300", "--out", str(out), "--quiet"]
    assert main(argv) == 0
    written = tomllib.loads((out / "config.toml").read_text())
    assert len(written["models"]) == 200 and "catalog" not in written
    again = read_config(out / "config.toml")
    assert again.models == read_config(models=200).models  # the run's record reloads
    refused(capsys, main, ["run", "--models", "0"], "--models")


def test_a_profile_scales_a_generated_catalog_as_it_scales_the_same_catalog_written(tmp_path):
    profile = PROFILES / "dev-vm-cpu.json"
    path = cluster(tmp_path, "[catalog]\nmodels = 20\n")
    written = tmp_path / "written.toml"
    written.write_text(read_config(path).to_toml())  # the same models, as [models] tables
    scaled = read_config(path, profile).models
    assert scaled == read_config(written, profile).models
    assert scaled != read_config(path).models  # the profile did change them


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[catalog]\nseed = 1\n", "catalog.models: missing"),
        ("[catalog]\nmodels = 0\n", "catalog.models: expected a positive integer"),
        ("[catalog]\nmodels = 3\nparameters = []\n", "catalog.parameters: expected a non-empty"),
        ("[catalog]\nmodels = 3\nparameters = [-1]\n", "catalog.parameters"),
        ("[catalog]\nmodels = 3\nparameters = [1e9]\nshares = [1, 2]\n", "2 shares for 1"),
        ("[catalog]\nmodels = 3\nparameters = [1e9]\nshares = [0]\n", "catalog.shares"),
        ("[catalog]\nmodels = 3\ncolour = 1\n", "catalog.colour: unknown key"),
        ("[catalog]\nmodels = 3\nparameters = [1e12]\n", "fits on no server group's GPUs"),
        ('[catalog]\nmodels = 3\nfile = "x.csv"\n', "catalog.models: not with catalog.file"),
        ('[catalog]\nfile = "absent.csv"\n', "catalog.file: cannot read"),
        (
            '[catalog]\nmodels = 3\n[models.m]\nweights = "1GB"\n',
            "catalog: give [models] or [catalog], not both",
        ),
    ],
)
def test_bad_catalogs_are_refused_naming_the_key(tmp_path, text, expected):
    path = cluster(tmp_path, text)
    with pytest.raises(InputError, match=re.escape(expected)) as caught:
        read_config(path)
    assert str(caught.value).startswith(str(path))


@pytest.mark.parametrize(
    ("listing", "expected"),
    [
        ("model,size\na,1e9\n", "hub.csv:1: expected the header name,parameters"),
        ("name,parameters\na,1e9\nb\n", "hub.csv:3: expected a name and a parameter count"),
        ("name,parameters\na,1e9\na,2e9\n", "hub.csv:3: model 'a' listed twice"),
        ("name,parameters\na,many\n", "hub.csv:2: parameters"),
        ("name,parameters\n", "hub.csv: lists no models"),
    ],
)
def test_a_bad_model_listing_is_refused_naming_its_line(tmp_path, listing, expected):
    (tmp_path / "hub.csv").write_text(listing)
    with pytest.raises(InputError, match=re.escape(expected)):
        read_config(cluster(tmp_path, '[catalog]\nfile = "hub.csv"\n'))


def test_a_hub_builds_books_only_for_the_models_a_run_meets():
    # 100,000 models, 300 requests: the per-model books (rooms, holders, start-up steps)
    # exist for the models the requests named and those placed on SSD, not for all.
    config = read_config(models=100_000)
    trace = synthesize(
        np.random.default_rng(0), list(config.models), rate=5.0, count=300,
        reference=traces.reference_tokens,
    )  # fmt: skip
    sim = Simulation(config, trace, "locality", seeds.rng(0, "policy"))
    sim.run()
    met = set(trace.model)
    placed = {name for name, spec in config.models.items() if spec.ssd_servers}
    assert set(sim._rooms) <= met and set(sim.cluster._steps) <= met
    assert set(sim.cluster._holders["ssd"]) <= met | placed
    assert len(met | placed) < 1_000 and not np.isnan(sim.table.ttft_s).any()
