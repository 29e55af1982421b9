import tomllib

import pytest

from sim.config import read_config
from thaw_kernel.errors import InputError


def write(tmp_path, text):
    path = tmp_path / "cluster.toml"
    path.write_text(text)
    return path


def test_the_defaults_describe_a_4x4_cluster_and_a_seven_model_catalog():
    config = read_config()
    assert config.server_count == 4 and config.servers[0].gpus == 4
    assert list(config.models)[:2] == ["opt-6.7b", "llama-2-7b"]
    assert config.models["llama-2-70b"].gpus == 4
    assert config.servers[0].network == 1.25e9


def test_the_resolved_config_reloads_to_the_same_configuration(tmp_path):
    config = read_config(write(tmp_path, "keep_alive_s = 5\n[[servers]]\ncount = 2\n"))
    again = read_config(write(tmp_path, config.to_toml()))
    assert again.resolved == config.resolved
    assert again.keep_alive_s == 5.0 and again.server_count == 2
    assert tomllib.loads(config.to_toml())["models"]["opt-6.7b"]["gpus"] == 1


def test_a_server_group_fills_missing_keys_from_the_default_group(tmp_path):
    config = read_config(write(tmp_path, '[[servers]]\nname = "x"\ncount = 3\ngpus = 8\n'))
    assert config.servers[0].gpus == 8 and config.servers[0].pcie == 25e9


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("keep_alive_secs = 3\n", "keep_alive_secs: unknown key"),
        ("keep_alive = 3\n", "keep_alive: expected a string NAME[:params], got 3"),
        ('keep_alive = "histogram:tail=101"\n', "keep_alive: tail: expected a number from 0"),
        ('keep_alive = "histogram:head=50,tail=10"\n', "keep_alive: head (50) must not"),
        ("[[servers]]\ngpus = -1\n", "servers[0].gpus: expected a positive integer"),
        ('[[servers]]\nnetwork = "fast"\n', "servers[0].network"),
        ('[[servers]]\nssd_read = "0GB/s"\n', "servers[0].ssd_read: expected a positive"),
        ("[[servers]]\ncolour = 1\n", "servers[0].colour: unknown key"),
        ("servers = []\n", "servers: expected at least one"),
        ('[models.m]\nweights = "1GB"\n', "models.m.gpus: missing"),
        (
            '[models.m]\nweights = "900GB"\ngpus = 4\n'
            "prefill_tokens_per_s = 1\ndecode_step_s = 1\n",
            "models.m: needs 4 GPUs",
        ),
        (
            '[models.m]\nweights = "1GB"\ngpus = 1\nprefill_tokens_per_s = 1\n'
            "decode_step_s = 1\nssd_servers = [9]\n",
            "models.m.ssd_servers: server 9 does not exist",
        ),
        ("keep_alive_s = 'long'\n", "keep_alive_s: expected a number"),
        ("keep_alive_s = = 3\n", "invalid TOML"),
        ("queue = 3\n", "queue: unknown queue discipline 3"),
        # TOML values of the wrong type: dates, arrays, tables where a number or a name is.
        ("keep_alive_s = 1979-05-27\n", "keep_alive_s: expected a number, got datetime.date"),
        ("[[servers]]\nname = 07:32:00\n", "servers[0].name: expected a non-empty string"),
        ("[workload]\nzipf_exponent = [1]\n", "workload.zipf_exponent: expected a number"),
        ("profile = 1979-05-27T07:32:00Z\n", "profile: expected a table, got datetime"),
        # The provenance a resolved configuration carries was once kept whatever it held.
        ("[profile]\npath = 1979-05-27\n", "profile.path: expected a string"),
        ('[profile]\napplied = ["a", 1]\n', "profile.applied: expected a list of strings"),
        ('[profile]\nowner = "me"\n', "profile.owner: unknown key"),
        (
            '[models.m]\nweights = "1GB"\ngpus = 1\nprefill_tokens_per_s = 1\n'
            "decode_step_s = 1\nttft_slo_s = 0\n",
            "models.m.ttft_slo_s: expected a positive number",
        ),
    ],
)
def test_bad_configs_name_the_file_and_key(tmp_path, text, expected):
    path = write(tmp_path, text)
    with pytest.raises(InputError) as err:
        read_config(path)
    message = str(err.value)
    assert message.startswith(str(path)) and expected in message and "\n" not in message


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_config(tmp_path / "nope.toml")
