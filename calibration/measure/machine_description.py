"""The `machine` part of a measured profile: what was measured, where, how, and the
caveats, so that a reader can judge the numbers without asking who made them."""

import os
import platform
import time
from pathlib import Path

import torch

from calibration.measure.linear_fit import Line
from calibration.measure.settings import CPU_INFERENCE_THREADS, Settings


def describe(
    device: str,
    directory: Path,
    chosen: Settings,
    said: str,
    checkpoint_bytes: int,
    notes: list[str],
    fits: dict[str, Line],
) -> dict:
    """The profile's `machine` object; `said` begins its description."""
    device_name = torch.cuda.get_device_name(0) if device == "cuda" else cpu_name()
    measured = (
        f" on {platform.node() or 'an unnamed host'}, {time.strftime('%Y-%m-%d')}: device "
        f"{device} ({device_name}), storage under {directory}. Cold reads are guest-cold: "
        "pages evicted and checked with mincore; a cache behind a virtual disk may "
        "survive that."
    )
    return {
        "description": said + measured,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cpus": len(os.sched_getaffinity(0)),
        "settings": {
            "checkpoint_bytes": checkpoint_bytes,
            "reader_bytes": chosen.reader_bytes,
            "runs": chosen.runs,
            "inference_threads": CPU_INFERENCE_THREADS if device == "cpu" else "default",
            "reference_model": {
                key: str(value) if key == "dtype" else value
                for key, value in chosen.model.__dict__.items()
            },
        },
        "fits": {name: line.record() for name, line in fits.items()},
        "notes": notes,
    }


def cpu_name() -> str:
    """The CPU's model name as Linux reports it, else the architecture."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()
