"""Where a sweep's runs execute: a local process pool, or tasks on a Ray cluster.

A backend takes (point, configuration) tasks and yields each run's output as it
finishes, in any order; the caller writes the run directories, so Ray workers need no
shared filesystem for the output (they do need to read the trace files at the same paths).
"""

import os
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

from sim.config import ClusterConfig
from sim.errors import InputError
from sim.sweep_grid import RunPoint
from sim.sweep_run import RunOutput, simulate

Task = tuple[RunPoint, ClusterConfig]


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


def run_ray(tasks: Sequence[Task], jobs: int | None, address: str | None) -> Iterator[RunOutput]:
    """Tasks on the Ray cluster at `address`, or on a local Ray started for this sweep
    (with `jobs` CPUs) and stopped after it. A Ray already initialised in this process
    (a notebook, a test) is used as it is."""
    try:
        import ray
    except ImportError:
        raise InputError("--backend ray: Ray is not installed (pip install 'thaw[ray]')") from None
    started = not ray.is_initialized()
    if started:
        try:
            if address is not None:
                ray.init(address=address, logging_level="ERROR", log_to_driver=False)
            else:
                ray.init(
                    num_cpus=jobs,
                    include_dashboard=False,
                    logging_level="ERROR",
                    log_to_driver=False,
                )
        except ConnectionError as err:
            raise InputError(f"--ray-address {address}: {err}") from None
    try:
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
    finally:
        if started:
            ray.shutdown()
