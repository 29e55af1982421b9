"""Where a sweep's runs execute: a local process pool, or tasks on a Ray cluster.

A backend takes (point, configuration) tasks and yields each run's output as it
finishes, in any order; the caller writes the run directories, so Ray workers need no
shared filesystem for the output (they do need to read the trace files at the same paths).
"""

import os
import socket
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from contextlib import contextmanager

from sim.runner.sweep.grid import RunPoint
from sim.runner.sweep.run import RunOutput, simulate
from sim.spec import ClusterConfig
from thaw_kernel.errors import InputError

Task = tuple[RunPoint, ClusterConfig]
Backend = Callable[[Sequence[Task]], Iterator[RunOutput]]


def run_local(tasks: Sequence[Task], jobs: int | None) -> Iterator[RunOutput]:
    """A process per CPU (or `jobs`); one job runs in this process, with no pool to start."""
    jobs = jobs or os.cpu_count() or 1
    if jobs == 1 or len(tasks) <= 1:
        for point, config in tasks:
            yield simulate(point, config)
        return
    with ProcessPoolExecutor(max_workers=min(jobs, len(tasks))) as pool:
        pending = {pool.submit(simulate, point, config) for point, config in tasks}
        try:
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    yield future.result()
        finally:
            for future in pending:
                future.cancel()


def _check_reachable(address: str) -> None:
    """Fail in seconds, not minutes (Ray retries an unreachable head for a long time)."""
    if address == "auto":
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except (OSError, ValueError) as err:
        raise InputError(f"--ray-address {address}: cannot connect ({err})") from None


@contextmanager
def ray_backend(jobs: int | None, address: str | None) -> Iterator[Backend]:
    """Tasks on the Ray cluster at `address`, or on a local Ray started for this sweep
    (with `jobs` CPUs) and stopped after it. A Ray already initialised in this process
    (a notebook, a test) is used as it is. Connects on entry, before the sweep writes."""
    try:
        import ray
    except ImportError:
        raise InputError("--backend ray: Ray is not installed (pip install 'thaw[ray]')") from None
    started = not ray.is_initialized()
    if started:
        quiet = {"logging_level": "ERROR", "log_to_driver": False}
        if address is not None:
            _check_reachable(address)
            try:
                ray.init(address=address, **quiet)
            except ConnectionError as err:
                raise InputError(f"--ray-address {address}: {err}") from None
        else:
            ray.init(num_cpus=jobs, include_dashboard=False, **quiet)

    def run(tasks: Sequence[Task]) -> Iterator[RunOutput]:
        remote = ray.remote(num_cpus=1)(simulate)
        pending = [remote.remote(point, config) for point, config in tasks]
        try:
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                for ref in done:
                    yield ray.get(ref)
        finally:
            for ref in pending:
                ray.cancel(ref)

    try:
        yield run
    finally:
        if started:
            ray.shutdown()


@contextmanager
def local_backend(jobs: int | None) -> Iterator[Backend]:
    yield lambda tasks: run_local(tasks, jobs)
