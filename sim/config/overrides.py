"""A loaded configuration under another queue discipline or keep-alive policy, as the
command line (`--queue`, `--keep-alive`), a sweep's axes and `sim.run` ask: the same
parsers as the cluster file's, so a value means one thing whichever way it came."""

from dataclasses import replace

from sim.keep_alive import parse_keep_alive
from sim.queues import parse_queue
from sim.spec import ClusterConfig, KeepAliveSpec
from thaw_kernel.errors import InputError


def check_sleep_table(keep_alive: KeepAliveSpec, has_sleep: bool, where: str) -> None:
    """A keep-alive that lets instances sleep needs a sleep table to say how; InputError
    names `where` the keep-alive was given."""
    if keep_alive.sleep_s and not has_sleep:
        raise InputError(
            f"{where}: {keep_alive.text!r} lets instances sleep; that needs a sleep table "
            "{level, gpu_memory}, at the top of the cluster file or in an engine "
            "(docs/sleep-and-overlap.md)"
        )


def with_queue(config: ClusterConfig, queue: str, where: str = "queue") -> ClusterConfig:
    """`config` under the queue discipline `queue`, its written configuration saying so."""
    try:
        queue = parse_queue(queue)
    except ValueError as err:
        raise InputError(f"{where}: {err}") from None
    return replace(config, queue=queue, resolved={**config.resolved, "queue": queue})


def with_keep_alive(
    config: ClusterConfig, keep_alive: str | KeepAliveSpec, where: str = "keep_alive"
) -> ClusterConfig:
    """`config` under the keep-alive policy `keep_alive` (`NAME[:params]`, or as already
    parsed), its written configuration saying so."""
    try:
        spec = parse_keep_alive(keep_alive)
    except ValueError as err:
        raise InputError(f"{where}: {err}") from None
    check_sleep_table(spec, bool(config.sleep), where)
    resolved = {**config.resolved, "keep_alive": spec.text}
    return replace(config, keep_alive=spec, resolved=resolved)
