"""Cold-start arithmetic checked by hand: TTFT = start-up + bytes / bottleneck + prefill."""

from conftest import GiB, simulate, tiny_config

STARTUP = 2.0
PREFILL_512 = 512 / 1024.0  # 512 prompt tokens at 1024 tokens/s


def test_remote_load_is_bottlenecked_by_the_network(tmp_path):
    sim = simulate(tiny_config(tmp_path), [(0.0, "a", 512, 1)])
    t = sim.table
    # 4 GiB over min(network 1 GiB/s, PCIe 4 GiB/s).
    assert t.ttft_s[0] == STARTUP + 4 * GiB / (1 * GiB) + PREFILL_512
    assert t.startup_s[0] == STARTUP + 4.0
    assert t.queue_s[0] == 0.0
    assert t.prefill_s[0] == PREFILL_512
    assert sim.loads_by_tier == {"dram": 0, "ssd": 0, "remote": 1}


def test_ssd_load_is_bottlenecked_by_the_ssd(tmp_path):
    sim = simulate(tiny_config(tmp_path, ssd_a="[0]"), [(1.5, "a", 512, 1)])
    assert sim.table.ttft_s[0] == STARTUP + 4 * GiB / (2 * GiB) + PREFILL_512
    assert sim.loads_by_tier["ssd"] == 1


def test_dram_load_is_bottlenecked_by_pcie(tmp_path):
    # The first request loads from the SSD and installs the checkpoint in DRAM; after
    # keep-alive (8 s) the instance is gone and the second request loads from DRAM.
    sim = simulate(tiny_config(tmp_path, ssd_a="[0]"), [(0.0, "a", 512, 1), (100.0, "a", 512, 1)])
    assert sim.loads_by_tier == {"dram": 1, "ssd": 1, "remote": 0}
    assert sim.table.ttft_s[1] == STARTUP + 4 * GiB / (4 * GiB) + PREFILL_512


def test_a_multi_gpu_load_gets_every_gpus_pcie_lanes(tmp_path):
    extra = """
[models.big]
weights = "8GiB"
gpus = 2
prefill_tokens_per_s = 1024.0
decode_step_s = 0.125
"""
    config = tiny_config(tmp_path, extra=extra)
    sim = simulate(config, [(0.0, "big", 512, 1), (50.0, "big", 512, 1)])
    # Second load from DRAM over two GPUs' PCIe: 8 GiB / (2 x 4 GiB/s).
    assert sim.loads_by_tier == {"dram": 1, "ssd": 0, "remote": 1}
    assert sim.table.ttft_s[1] == STARTUP + 8 * GiB / (8 * GiB) + PREFILL_512


def test_two_concurrent_loads_share_the_ssd_equally(tmp_path):
    config = tiny_config(tmp_path, ssd_a="[0]", ssd_b="[0]")
    sim = simulate(config, [(0.0, "a", 512, 1), (0.0, "b", 512, 1)])
    # Both load 4 GiB over the 2 GiB/s SSD at once: 1 GiB/s each, 4 s each.
    half = 4 * GiB / (1 * GiB)
    assert list(sim.table.ttft_s) == [STARTUP + half + PREFILL_512] * 2
    assert list(sim.table.server) == [0, 0]


def test_a_load_speeds_up_when_its_neighbour_finishes(tmp_path):
    config = tiny_config(tmp_path, ssd_a="[0]", ssd_b="[0]")
    # b starts loading 1 s after a: a has 2 GiB left when they start sharing.
    sim = simulate(config, [(0.0, "a", 512, 1), (1.0, "b", 512, 1)])
    t_share = STARTUP + 1.0
    a_done = t_share + 2 * GiB / (1 * GiB)  # 2 GiB at 1 GiB/s
    # b moved 2 GiB while sharing, then 2 GiB alone at 2 GiB/s.
    b_done = a_done + 2 * GiB / (2 * GiB)
    assert sim.table.ttft_s[0] == a_done + PREFILL_512
    assert sim.table.ttft_s[1] == b_done + PREFILL_512 - 1.0


def test_simulated_time_stays_a_python_float(tmp_path):
    # The trace's arrival times are a numpy column; a numpy scalar let into the clock
    # spreads to every time computed from it, and its arithmetic costs several times a
    # Python float's on every event.
    sim = simulate(tiny_config(tmp_path), [(0.0, "a", 512, 4), (0.5, "a", 512, 4)])
    assert type(sim.clock.now) is float
    assert type(sim.clock.last_event_s) is float


def test_the_requests_frame_is_writable_and_its_trace_columns_are_copies(tmp_path):
    sim = simulate(tiny_config(tmp_path), [(0.0, "a", 512, 4)])
    frame = sim.table.frame()
    frame.loc[0, "arrival_s"] = 1.0  # the trace's own columns are read-only views
    assert sim.table.arrival[0] == 0.0


def test_the_tables_trace_cells_are_the_columns_own_memory_as_python_numbers(tmp_path):
    # The once-a-request reads go through memoryviews of the trace's columns: the same
    # values as the numpy columns, no copy, and Python numbers (a numpy scalar would
    # spread into the clock as above).
    sim = simulate(tiny_config(tmp_path), [(0.0, "a", 512, 4), (0.5, "a", 256, 2)])
    t = sim.table
    for cells, column in [
        (t.arrival_cells, t.arrival),
        (t.model_cells, t.model),
        (t.input_cells, t.input_tokens),
        (t.output_cells, t.output_tokens),
    ]:
        assert cells.obj is column
        assert [type(cells[i]) for i in range(t.n)] == [type(column[0].item())] * t.n
        assert cells.tolist() == column.tolist()
