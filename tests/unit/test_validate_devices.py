"""Where the replay's servers run: one CUDA device each where there are enough, the
devices in turn where there are fewer, the CPU where there are none."""

import torch

from calibration.validate import devices


def test_servers_take_the_devices_in_turn():
    assert [devices.server_device(s, 4) for s in range(3)] == ["cuda:0", "cuda:1", "cuda:2"]
    assert [devices.server_device(s, 2) for s in range(4)] == ["cuda:0", "cuda:1"] * 2
    assert [devices.server_device(s, 1) for s in range(2)] == ["cuda:0", "cuda:0"]
    assert devices.server_device(1, 0) == "cpu"


def test_the_report_says_how_many_servers_a_device_carries():
    assert devices.servers_per_device(2, 4) == 1
    assert devices.servers_per_device(3, 2) == 2
    assert devices.servers_per_device(2, 1) == 2
    assert devices.servers_per_device(2, 0) == 0


def test_this_machines_devices_decide_by_default():
    if torch.cuda.is_available():
        assert devices.kind() == "cuda"
        assert devices.server_device(0) == "cuda:0"
    else:
        assert devices.kind() == "cpu"
        assert devices.server_device(3) == "cpu"
        assert devices.servers_per_device(2) == 0
