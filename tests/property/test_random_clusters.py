"""Property tests on random heterogeneous clusters: whatever the hardware (host cores and
the loads' CPU on them included), the catalog, the start-up engines (executing while
loading or not), the trace, the keep-alive (its length and its policy, pre-warming and
sleeping engines included), peer loading on or off (its links too), a host's servers
sharing one disk or not, remote starts streaming or downloading to SSD first, the queue
discipline and the policy, the books hold after every event (`--check`), each request's
timeline agrees with the instance log (`tests/timeline.py`), and a fixed seed gives
identical results, whether the queue skips the retries that would surely wait or tries
every waiting model (`Needs`)."""

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from timeline import check_timeline

from policies import get_policy, policy_names
from policies.base import Needs
from sim.config import read_config
from sim.engine.simulator import Simulation
from sim.queues import queue_names
from thaw_kernel import seeds

BANDWIDTHS = ["256MiB/s", "1GiB/s", "4GiB/s"]
# Short bins and few samples, so that the histogram pre-warms within a 60-s trace.
# CPU-seconds per GB a load or a download takes on its host's cores: none, or enough that
# on one core a fast link waits for its CPU.
LOAD_CPU = [0.0, 0.5, 2.0]
KEEP_ALIVES = ["fixed", "fixed:5", "greedy-dual", "histogram:bin_s=1,min_samples=1,cv_min=0"]


@st.composite
def groups(draw):
    """One to three server groups, eight servers at most in all."""
    drawn, room = [], 8
    for _ in range(draw(st.integers(1, 3))):
        if room == 0:
            break
        count = draw(st.integers(1, min(3, room)))
        room -= count
        drawn.append(
            {
                "count": count,
                "gpus": draw(st.integers(1, 4)),
                "gpu_memory_gib": draw(st.sampled_from([8, 16, 48])),
                "dram_gib": draw(st.sampled_from([4, 16, 64])),
                "ssd_read": draw(st.sampled_from(BANDWIDTHS)),
                "network": draw(st.sampled_from(BANDWIDTHS)),
                "pcie": draw(st.sampled_from(BANDWIDTHS)),
                "host_cores": draw(st.integers(1, 4)),
                "gpu_link": draw(st.sampled_from(BANDWIDTHS)),
                "compute_network": draw(st.sampled_from(BANDWIDTHS)),
                "servers_per_host": draw(st.integers(1, 3)),
                "host_disk": draw(st.none() | st.sampled_from(BANDWIDTHS)),
                "load_cpu_s_per_gb": draw(st.sampled_from(LOAD_CPU)),
                "download_cpu_s_per_gb": draw(st.sampled_from(LOAD_CPU)),
                "startup_company_slowdown": draw(st.sampled_from([0.0, 0.25])),
            }
        )
    return drawn


@st.composite
def clusters(draw, max_models: int = 4, max_gib: int = 40):
    """A cluster TOML: random groups, and a catalog every model of which some group holds
    (up to `max_models` models of up to `max_gib` GiB)."""
    server_groups = draw(groups())
    servers = sum(g["count"] for g in server_groups)
    engines = draw(st.lists(engine(), max_size=2))
    text = f"keep_alive_s = {draw(st.sampled_from([0.0, 2.0, 30.0, 1000.0]))}\n"
    keep_alive = draw(st.sampled_from(KEEP_ALIVES))
    if draw(st.booleans()):  # sleeping engines, for up to 0.5 or 30 s
        sleep_s = draw(st.sampled_from([0.5, 30.0]))
        keep_alive += f"{',' if ':' in keep_alive else ':'}sleep={sleep_s}"
        level, memory = draw(st.sampled_from([1, 2])), draw(st.sampled_from(["1GiB", "40GiB"]))
        text += f'sleep = {{level = {level}, gpu_memory = "{memory}"}}\n'
    text += f'keep_alive = "{keep_alive}"\n'
    peer = draw(st.booleans())
    text += f"peer_loading = {str(peer).lower()}\n"
    text += f"remote_download = {str(draw(st.booleans())).lower()}\n"
    for i, g in enumerate(server_groups):
        text += (
            f'[[servers]]\nname = "g{i}"\ncount = {g["count"]}\ngpus = {g["gpus"]}\n'
            f'gpu_memory = "{g["gpu_memory_gib"]}GiB"\ndram = "{g["dram_gib"]}GiB"\n'
            f'ssd = "256GiB"\nssd_read = "{g["ssd_read"]}"\nnetwork = "{g["network"]}"\n'
            f'pcie = "{g["pcie"]}"\nhost_cores = {g["host_cores"]}\n'
            f"servers_per_host = {g['servers_per_host']}\n"
            f"load_cpu_s_per_gb = {g['load_cpu_s_per_gb']}\n"
            f"download_cpu_s_per_gb = {g['download_cpu_s_per_gb']}\n"
            f"startup_company_slowdown = {g['startup_company_slowdown']}\n"
        )
        if g["host_disk"] is not None:
            text += f'host_disk = "{g["host_disk"]}"\n'
        if peer:
            text += f'gpu_link = "{g["gpu_link"]}"\ncompute_network = "{g["compute_network"]}"\n'
    for m in range(draw(st.integers(1, max_models))):
        host = draw(st.sampled_from(server_groups))
        gpus = draw(st.integers(1, host["gpus"]))
        weights = draw(st.integers(1, min(max_gib, gpus * host["gpu_memory_gib"])))
        ssd = draw(st.lists(st.integers(0, servers - 1), max_size=2, unique=True))
        text += (
            f'[models.m{m}]\nweights = "{weights}GiB"\ngpus = {gpus}\n'
            f"prefill_tokens_per_s = {draw(st.sampled_from([512.0, 4096.0]))}\n"
            f"decode_step_s = {draw(st.sampled_from([0.02, 0.125]))}\n"
            f"decode_step_per_request_s = {draw(st.sampled_from([0.0, 0.01]))}\n"
            f"max_batch = {draw(st.integers(1, 8))}\nssd_servers = {sorted(ssd)}\n"
            f"ttft_slo_s = {draw(st.sampled_from([1.0, 10.0, 100.0]))}\n"
            f"prefill_fixed_s = {draw(st.sampled_from([0.0, 0.01]))}\n"
            f"prefill_waits_for_step = {str(draw(st.booleans())).lower()}\n"
            f"layers = {draw(st.sampled_from([1, 4, 32]))}\n"
        )
        if engines and draw(st.booleans()):
            text += f'engine = "e{draw(st.integers(0, len(engines) - 1))}"\n'
    for e, stages in enumerate(engines):
        text += f"[engines.e{e}]\nstages = [{', '.join(stages)}]\n"
        if stages[-1] == '{name = "load"}' and draw(st.booleans()):  # the load last, alone
            text += "execute_while_load = true\n"
    return text


STAGE = st.one_of(
    st.builds(
        '{{name = "{}", cpu_seconds = {}}}'.format, st.just("cpu"), st.sampled_from([0.5, 3.0])
    ),
    st.builds(
        '{{name = "{}", seconds = {}}}'.format, st.just("fixed"), st.sampled_from([0.0, 1.0])
    ),
)


@st.composite
def traces(draw, models: list[str], max_output: int, max_size: int) -> pd.DataFrame:
    """Up to `max_size` requests in the first minute, for `models`, in arrival order."""
    rows = draw(
        st.lists(
            st.tuples(
                st.floats(0.0, 60.0, allow_nan=False),
                st.sampled_from(models),
                st.integers(1, 4096),
                st.integers(1, max_output),
            ),
            min_size=1,
            max_size=max_size,
        )
    )
    return pd.DataFrame(
        sorted(rows), columns=["arrival_s", "model", "input_tokens", "output_tokens"]
    )


@st.composite
def engine(draw):
    """Start-up stages: the load and up to three others, some steps overlapped."""
    stages = ['{name = "load"}'] + [
        s.replace('"cpu"', f'"cpu{i}"').replace('"fixed"', f'"fixed{i}"')
        for i, s in enumerate(draw(st.lists(STAGE, max_size=3)))
    ]
    order = draw(st.permutations(stages))
    steps, i = [], 0
    while i < len(order):
        n = draw(st.integers(1, len(order) - i))
        steps.append(order[i] if n == 1 else f"[{', '.join(order[i : i + n])}]")
        i += n
    return steps


@pytest.mark.parametrize("queue", queue_names())
@pytest.mark.parametrize("policy", policy_names())
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cluster=clusters(), data=st.data())
def test_the_books_hold_on_any_cluster(tmp_path, policy, queue, cluster, data):
    path = tmp_path / "cluster.toml"
    path.write_text(f'queue = "{queue}"\n{cluster}')
    config = read_config(path)
    trace = data.draw(traces(list(config.models), max_output=400, max_size=30))
    runs = []
    for gated in (True, False):
        sim = Simulation(config, trace, policy, seeds.rng(5, "policy"), check=True)
        if not gated:
            sim.queue.needs = Needs.NOTHING
        sim.run()
        runs.append(sim.table.frame())
    check_timeline(runs[0], sim.cluster.log.frame(), config)
    pd.testing.assert_frame_equal(*runs)


@pytest.mark.parametrize(
    "policy", [p for p in policy_names() if get_policy(p).needs != Needs.NOTHING]
)
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cluster=clusters(max_models=12, max_gib=16), data=st.data())
def test_skipped_retries_change_nothing_when_many_models_wait(tmp_path, policy, cluster, data):
    """Up to twelve models (of up to 16 GiB: their SSD copies fit) and twice the
    requests: many models wait at once, and the queue may skip their retries."""
    queue = data.draw(st.sampled_from(queue_names()))
    path = tmp_path / "cluster.toml"
    path.write_text(f'queue = "{queue}"\n{cluster}')
    config = read_config(path)
    trace = data.draw(traces(list(config.models), max_output=400, max_size=60))
    runs = []
    for needs in (get_policy(policy).needs, Needs.NOTHING):
        sim = Simulation(config, trace, policy, seeds.rng(5, "policy"), check=True)
        sim.queue.needs = needs
        sim.run()
        runs.append((sim.table.frame(), sim.cluster.log.frame()))
    for gated, full in zip(*runs, strict=True):
        pd.testing.assert_frame_equal(gated, full, check_exact=True)
