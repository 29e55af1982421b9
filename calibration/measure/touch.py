"""Reading every byte of loaded tensors, so that a lazy (mmap-backed) loader pays its cost."""

import numpy as np
import torch


def touch(tensors: dict[str, torch.Tensor]) -> int:
    """Read every byte through a wide view (a uint8 sum would time the sum, not the load).

    On the CPU through numpy, single-threaded: torch's two-thread reductions stalled
    whenever another process held the second core, which timed the scheduler.
    """
    total = 0
    for tensor in tensors.values():
        data = tensor.reshape(-1).view(torch.uint8)
        if data.is_cuda:
            wide = data.view(torch.int64) if data.numel() % 8 == 0 else data
            total += int(wide.sum())
        else:
            array = data.numpy()
            total += int((array.view(np.uint64) if array.size % 8 == 0 else array).sum())
    return total
