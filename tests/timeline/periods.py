"""What each awake period must show, from the configuration: its load's phases alone,
its start-up's steps or its wake's copy, and whether it shared its links or its cores."""

import math

from sim.spec import ClusterConfig, ServerGroup
from thaw_kernel.stages import CPU, LOAD

from .records import Period, Row


def awake_periods(lives: list[tuple[Row, bool]], config: ClusterConfig) -> list[Period]:
    """Each awake row with its expectations (`Period`), and which loads ran alone."""
    servers = _servers(config)
    swaps = _swap_copies([row for row, _ in lives], config, servers)
    periods = []
    for row, woken in lives:
        group, host, links = servers[row.server]
        period = Period(row, group, host, links, config.models[row.model].weights)
        _expect_load(period, config)
        if woken:
            _expect_wake(period, config, swaps.get((row.server, row.allocated_s), 0.0))
        else:
            _expect_start(period, config)
        periods.append(period)
    for period in periods:
        period.alone = period.tiered and not _shares_links(period, periods)
        period.alone &= not (period.load_cores and shares_cores(period, periods))
    return periods


def _servers(config: ClusterConfig) -> list[tuple[ServerGroup, int, int]]:
    """Per server, as `Cluster` builds them: its group, its host (`servers_per_host`
    consecutive servers share one's cores) and its links domain (the host's, when the
    group has a `host_disk`; else its own)."""
    out: list[tuple[ServerGroup, int, int]] = []
    host = -1
    for group in config.servers:
        for k in range(group.count):
            host += k % group.servers_per_host == 0
            out.append((group, host, host if group.host_disk else -1 - len(out)))
    return out


def _swap_copies(awake: list[Row], config: ClusterConfig, servers: list) -> dict:
    """(server, instant) -> the seconds of the level-1 copies to DRAM that began then: a
    wake's swap is some of them (the others, keep-alive sleeps at the same instant)."""
    out: dict[tuple[int, float], float] = {}
    for row in awake:
        if row.end == "asleep" and _level(config, row.model) == 1:
            key = (row.server, row.ended_s)
            out[key] = out.get(key, 0.0) + _copy_s(config, row, servers[row.server][0])
    return out


def _level(config: ClusterConfig, model: str) -> int:
    spec = config.sleep_of(model)
    return 0 if spec is None else spec.level


def _copy_s(config: ClusterConfig, row: Row, group: ServerGroup) -> float:
    """A level-1 engine's weights over its own PCIe lanes, either way."""
    model = config.models[row.model]
    return model.weights / (model.gpus * group.pcie)


def _expect_load(period: Period, config: ClusterConfig) -> None:
    """A tiered load's phases alone, each its bytes at the least of the PCIe lanes and its
    links (a download has no PCIe cap; a shared host disk is on the SSD's path and a
    download's), and the CPU its phases take on the host's cores (`load_cpu_s_per_gb`,
    `download_cpu_s_per_gb`), each capped at the cores that end it with its bytes."""
    row, group = period.row, period.group
    if row.tier == "peer":
        return
    model = config.models[row.model]
    pcie, disk = model.gpus * group.pcie, group.host_disk or math.inf
    ssd = min(pcie, group.ssd_read, disk)
    period.download = config.remote_download and row.tier == "remote"
    rates, costs = {
        "dram": ([pcie], [0.0]),
        "ssd": ([ssd], [group.load_cpu_s_per_gb]),
        "remote": ([min(pcie, group.network)], [group.download_cpu_s_per_gb]),
    }[row.tier]
    if period.download:
        rates = [min(group.network, disk), ssd]
        costs = [group.download_cpu_s_per_gb, group.load_cpu_s_per_gb]
    period.phases_s = [model.weights / rate for rate in rates]
    period.load_cores = max(cost / 1e9 * rate for cost, rate in zip(costs, rates, strict=True))
    period.cpu_s = sum(costs) * model.weights / 1e9


def _expect_wake(period: Period, config: ClusterConfig, swap_s: float) -> None:
    """A wake at level 1 takes its copy over PCIe; at level 2 its reload as recorded; each
    plus its swap, at most every level-1 copy to DRAM that began on its server then."""
    level = _level(config, period.row.model)
    period.kind = f"wake{level}"
    copy_s = _copy_s(config, period.row, period.group)
    period.least = copy_s if level == 1 else period.row.load_s
    period.most = period.least + swap_s
    period.cores = period.load_cores if level == 2 else 0.0
    period.cpu_s = period.cpu_s if level == 2 else 0.0


def _expect_start(period: Period, config: ClusterConfig) -> None:
    """A cold start takes its steps one after another, each as long as its slowest stage:
    a fixed stage its seconds, a CPU stage its CPU-seconds on one core (or on the host's
    fewer), the load its recorded seconds."""
    host_cores = period.group.host_cores
    steps = [
        [(s.kind, s.amount / min(1.0, host_cores) if s.kind == CPU else s.amount) for s in step]
        for step in config.steps(period.row.model)
    ]
    k = next(k for k, step in enumerate(steps) if any(kind == LOAD for kind, _ in step))
    period.least = sum(_step_s(step, period.row.load_s) for step in steps)
    period.before_s = sum(_step_s(step, 0.0) for step in steps[:k])
    period.after_s = sum(_step_s(step, 0.0) for step in steps[k + 1 :])
    period.cpu_s += sum(
        s.amount for step in config.steps(period.row.model) for s in step if s.kind == CPU
    )
    period.cores = max(
        sum(1.0 if kind == CPU else period.load_cores if kind == LOAD else 0.0 for kind, _ in step)
        for step in steps
    )


def _step_s(step: list[tuple[str, float]], load_s: float) -> float:
    """A step's seconds: its slowest stage's (the load's as given)."""
    return max(load_s if kind == LOAD else seconds for kind, seconds in step)


def _shares_links(period: Period, periods: list[Period]) -> bool:
    """Whether another tiered load of its links domain could have run beside its load
    (DRAM loads cross only their own PCIe lanes, peer loads the fabric: never)."""
    if period.row.tier == "dram":
        return False
    start, end = period.load_window
    for other in periods:
        if (
            other is period
            or other.links != period.links
            or other.row.tier not in ("ssd", "remote")
        ):
            continue
        other_start, other_end = other.load_window
        if other_start < end and other_end > start:
            return True
    return False


def shares_cores(period: Period, periods: list[Period]) -> bool:
    """Whether its host's cores could have been oversubscribed while it started (the most
    cores every start-up on its host overlapping it could take at once, together, itself
    included, exceed the host's), or, where its group slows a start-up in company, whether
    any other CPU work could have run beside its CPU stages."""
    start, end = period.row.allocated_s, period.end_s
    overlapping = [
        other
        for other in periods
        if other.host == period.host and other.row.allocated_s < end and other.end_s > start
    ]
    if sum(other.cores for other in overlapping) > period.group.host_cores:
        return True
    company = period.cores > 1.0 or any(o is not period and o.cores for o in overlapping)
    return bool(period.group.startup_company_slowdown) and company
