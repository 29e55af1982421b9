"""Each request's timeline rebuilt from records the simulator keeps apart, and checked.

The request table splits a TTFT into queue, start-up and prefill; the instance log says,
separately, when each instance was given its GPUs, how long its checkpoint load (and the
download part of it) took and from which tier, when it was ready, when it fell asleep, was
woken and ended. Joined on the instance a request was placed on, the two must tell one
story, and every start-up must take at least what the hardware allows: its steps one after
another, each as long as its slowest stage (a fixed stage its seconds, a CPU stage its
CPU-seconds on at most one core, the load its bytes over the slowest link of each phase),
exactly that where nothing shared a resource with it. Every expected value here comes from
the log and the configuration, never from the request table's own formulas, so a wrong
join, a mis-recorded tier, a stage skipped or charged twice, a load faster than its links,
a wake that skipped its copy, or CPU stages running on cores the host lacks all fail here,
where a check that TTFT equals the sum of its parts cannot.

Where exactness cannot be derived from the log alone the check is a bound, and each
function says so: a load or CPU stage that may have shared its links or cores (the fluid
sharing is the simulator's to compute, not ours), a peer load (its chain's rate depends on
every hop), and a wake's swap (which idle instances it put to sleep is not recorded apart
from the keep-alive's own sleeps at the same instant).

The records are plain Python objects, not frames: the property tests run this after every
small simulation, where pandas' per-call overhead would cost more than the simulation.
"""

import itertools
import math
from dataclasses import dataclass, field, fields

import pandas as pd

from sim.spec import ClusterConfig, ServerGroup
from thaw_kernel.stages import CPU, LOAD

EPS = 1e-9
RTOL = 1e-9


def check_timeline(requests: pd.DataFrame, instances: pd.DataFrame, config: ClusterConfig) -> None:
    """Assert that `requests` (requests.parquet) and `instances` (instances.parquet) of a
    run of `config` agree, request by request, start-up by start-up and load by load."""
    rows = [Row(*r) for r in instances[_columns(Row)].itertuples(index=False)]
    lives = check_lives(rows, config)
    periods = _periods(lives, config)
    check_loads(periods)
    check_startups(periods)
    check_cores(periods)
    check_requests(requests, periods, config)


@dataclass
class Row:
    """One row of the instance log."""

    instance: int
    model: str
    server: int
    gpus: int
    tier: str
    allocated_s: float
    ready_s: float
    ended_s: float
    end: str
    source: int
    chain: int
    asleep: bool
    load_s: float
    download_s: float


@dataclass
class Period:
    """An awake row and what the log and the configuration say it must show."""

    row: Row
    group: ServerGroup
    host: int  # its host's index: the cores its CPU work shares
    links: int  # its links domain's index: the host's if its servers share a disk
    weights: int  # its checkpoint's bytes
    kind: str = "start"  # or "wake1", "wake2"
    least: float = 0.0  # the least seconds from its GPUs to ready
    most: float = math.inf  # the most (a wake's, whose swap is not recorded)
    phases_s: list[float] = field(default_factory=list)  # its tiered load's phases, solo
    download: bool = False  # its load downloads to SSD first
    cpu_s: float = 0.0  # CPU-seconds of its CPU stages and its load, in all
    cores: float = 0.0  # the most cores its start-up takes at once
    load_cores: float = 0.0  # the most its load's CPU work takes
    before_s: float = 0.0  # the least seconds of its steps before the load's
    after_s: float = 0.0  # and after it
    alone: bool = False  # a tiered load that shared neither its links nor its cores

    @property
    def end_s(self) -> float:
        """Ready, or its end if it never was (the run was cut short)."""
        return self.row.ended_s if math.isnan(self.row.ready_s) else self.row.ready_s

    @property
    def load_window(self) -> tuple[float, float]:
        """Where its load ran: after the steps before it, before those after it."""
        return self.row.allocated_s + self.before_s, self.end_s - self.after_s

    @property
    def tiered(self) -> bool:
        return self.row.tier != "peer" and not math.isnan(self.row.load_s)


# --- instance lives ---


def check_lives(rows: list[Row], config: ClusterConfig) -> list[tuple[Row, bool]]:
    """Each instance's rows tell one life: it starts awake; an awake period ending `asleep`
    is followed by an asleep one from that instant, which, ending `woken`, is followed by an
    awake one from that instant; asleep rows hold no GPU, load nothing and belong to a
    model that sleeps; awake rows hold their model's GPUs and are ready before they end.
    Returns each awake row and whether it is a wake."""
    lives: dict[int, list[Row]] = {}
    for row in rows:
        lives.setdefault(row.instance, []).append(row)
    awake = []
    for life in lives.values():
        life.sort(key=lambda r: r.allocated_s)  # stable: ties in the log's order
        assert not life[0].asleep, "an instance's life begins asleep"
        for before, row in itertools.pairwise(life):
            assert row.allocated_s == before.ended_s, "a gap or an overlap in an instance's life"
            assert row.asleep != before.asleep
            assert before.end == ("asleep" if row.asleep else "woken"), f"after {before.end}"
        for k, row in enumerate(life):
            if row.asleep:
                _check_asleep(row, config)
            else:
                _check_awake(row, config)
                awake.append((row, k > 0))
    return awake


def _check_asleep(row: Row, config: ClusterConfig) -> None:
    assert config.sleep_of(row.model) is not None, f"{row.model} slept without a sleep table"
    assert row.gpus == 0, "an engine asleep holds GPUs"
    assert math.isnan(row.ready_s) and math.isnan(row.load_s), "an engine asleep loaded"
    assert row.end in ("woken", "expired", "running")


def _check_awake(row: Row, config: ClusterConfig) -> None:
    assert row.gpus == config.models[row.model].gpus, "an instance holds the wrong GPUs"
    if math.isnan(row.ready_s):
        assert row.end == "running", "an instance ended before it was ready"
        return
    assert row.allocated_s <= row.ready_s + EPS <= row.ended_s + 2 * EPS, "ready out of order"


# --- what each awake period must show ---


def _periods(lives: list[tuple[Row, bool]], config: ClusterConfig) -> list[Period]:
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
        period.alone &= not (period.load_cores and _shares_cores(period, periods))
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


def _shares_cores(period: Period, periods: list[Period]) -> bool:
    """Whether its host's cores could have been oversubscribed while it started: the most
    cores every start-up on its host overlapping it could take at once, together (itself
    included), exceed the host's."""
    start, end = period.row.allocated_s, period.end_s
    wanted = sum(
        other.cores
        for other in periods
        if other.host == period.host and other.row.allocated_s < end and other.end_s > start
    )
    return wanted > period.group.host_cores


# --- loads ---


def check_loads(periods: list[Period]) -> None:
    """Every tiered load took at least its phases' solo seconds (a download at least its
    own, the load from the SSD after it at least its), and exactly that when it ran alone
    (`Period.alone`; else a bound: how the links and cores were shared is the simulator's
    to compute). Only a download to SSD records one. A peer load is bounded by its hop
    (`_check_peer_load`)."""
    instances: dict[int, list[Period]] = {}
    for period in periods:
        instances.setdefault(period.row.instance, []).append(period)
    for period in periods:
        row = period.row
        if row.tier == "peer":
            _check_peer_load(period, instances)
            continue
        assert row.source == -1 and row.chain == -1, "a tiered load names a peer"
        if math.isnan(row.load_s):
            continue
        assert period.download != math.isnan(row.download_s), "a download (un)recorded"
        _at_least(row.load_s, sum(period.phases_s), "a load beat its slowest links")
        if period.download:
            _at_least(row.download_s, period.phases_s[0], "a download beat its links")
            _at_least(row.load_s - row.download_s, period.phases_s[1], "a load beat the SSD")
        if period.alone:
            _close(row.load_s, sum(period.phases_s), "a load alone took other than its links")
            if period.download:
                _close(row.download_s, period.phases_s[0], "a download alone")


def _check_peer_load(period: Period, instances: dict[int, list[Period]]) -> None:
    """A peer load (bound only: a chain's rate depends on its other hops and chains, which
    the log does not record) received the whole checkpoint no faster than its own hop
    allows (its GPUs' GPU links from a source on its server, else the slower NIC of the
    two), from an instance of its model that lived while it loaded."""
    row = period.row
    assert row.source >= 0 and row.chain >= 0, "a peer load names no source or chain"
    if math.isnan(row.load_s):
        return
    sources = instances[row.source]
    assert all(s.row.model == row.model for s in sources), "a peer of another model"
    joined = row.ready_s - period.after_s - row.load_s
    alive = [
        s for s in sources if s.row.allocated_s <= row.ready_s and s.row.ended_s >= joined - EPS
    ]
    assert alive, "a peer load from an instance not alive then"
    source = alive[0]
    if source.row.server == row.server:
        hop = row.gpus * period.group.gpu_link
    else:
        hop = min(period.group.compute_network, source.group.compute_network)
    _at_least(row.load_s, period.weights / hop, "a peer load beat its hop")


# --- start-ups and wakes ---


def check_startups(periods: list[Period]) -> None:
    """A cold start took at least its steps (`_expect_start`), and exactly that when its
    host's cores could not have been oversubscribed meanwhile (else its CPU stages may
    have shared them: a bound). A wake took at least its copy (level 1, from DRAM, loading
    nothing) or its reload (level 2), and at most that plus its possible swap: exactly the
    copy or the reload when no engine on its server fell asleep at its instant."""
    for period in periods:
        row = period.row
        if math.isnan(row.ready_s):
            continue
        took = row.ready_s - row.allocated_s
        _at_least(took, period.least, f"a {period.kind} beat its stages")
        if period.kind == "start":
            if not (period.cores and _shares_cores(period, periods)):
                _close(took, period.least, "a start-up alone took other than its steps")
            continue
        assert took <= period.most * (1 + RTOL) + EPS, "a wake took more than its swap"
        level1 = period.kind == "wake1"
        assert (row.tier == "dram") or not level1, "a level-1 wake not from DRAM"
        assert math.isnan(row.load_s) == level1, "a level-1 wake loaded, or a level-2 did not"


def check_cores(periods: list[Period]) -> None:
    """No host did more CPU work than its cores allow: for every span from one start-up's
    allocation to another's readiness, the CPU-seconds of the start-ups that lay wholly
    inside it (their CPU stages and their loads' CPU) fit in its cores times its length."""
    hosts: dict[int, list[Period]] = {}
    for period in periods:
        if period.cpu_s and not math.isnan(period.row.ready_s):
            hosts.setdefault(period.host, []).append(period)
    for busy in hosts.values():
        busy.sort(key=lambda p: p.row.ready_s)
        cores = busy[0].group.host_cores
        for a in {p.row.allocated_s for p in busy}:
            done = 0.0
            for p in busy:
                if p.row.allocated_s >= a:
                    done += p.cpu_s
                    room = cores * (p.row.ready_s - a)
                    assert done <= room * (1 + RTOL) + EPS, "a host ran more CPU than its cores"


# --- requests ---


@dataclass
class Request:
    """A finished request of the request table, and the awake period it was placed in."""

    model: str
    arrival_s: float
    input_tokens: int
    server: int
    instance: int
    tier: str
    queue_s: float
    startup_s: float
    migration_pause_s: float
    prefill_s: float
    ttft_s: float
    e2e_s: float
    migrations: int
    period: Period | None = None

    @property
    def placed(self) -> float:
        return self.arrival_s + self.queue_s

    @property
    def first(self) -> float:
        return self.arrival_s + self.ttft_s

    @property
    def end(self) -> float:
        return self.arrival_s + self.e2e_s


def check_requests(requests: pd.DataFrame, periods: list[Period], config: ClusterConfig) -> None:
    """Requests joined to the awake period of their instance they were placed in tell its
    story: placed while it lived (or while it waited for migrations), as warm only once it
    was ready and as its tier before, their start-up the wait from placement to its
    readiness (for the one whose prefill ran behind the load, to its first token less a
    prefill: `_check_pipelined`), their first token no earlier than it was ready, no
    prefill faster than the model's, and served to the end on it, or moved off it by
    migration to a live instance of its model."""
    done = requests[requests["status"] == "done"]
    rows = [Request(*r) for r in done[_columns(Request)].itertuples(index=False)]
    _join(rows, periods)
    first_on: dict[int, Request] = {}
    for r in rows:
        _check_request(r, config)
        best = first_on.get(id(r.period))
        if best is None or r.first < best.first:
            first_on[id(r.period)] = r
    pipelined = {id(r) for r in first_on.values() if _check_pipelined(r, config)}
    for r in rows:
        wait = max(r.placed, r.period.row.ready_s) - r.placed
        if id(r) not in pipelined:
            assert abs(r.startup_s - wait) <= EPS * max(1.0, wait), "a start-up not its wait"
        _check_end(r, periods)


def _join(requests: list[Request], periods: list[Period]) -> None:
    """Each request's awake period of its instance: the last to begin by its placement
    (an instance's awake periods are apart by a sleep), or its first if it was placed
    while the instance waited for migrations to free its GPUs (`_check_held`)."""
    lives: dict[int, list[Period]] = {}
    for period in periods:
        lives.setdefault(period.row.instance, []).append(period)
    for r in requests:
        assert r.instance >= 0, "a finished request names no instance"
        life = lives[r.instance]
        began = [p for p in life if p.row.allocated_s <= r.placed + 1e-6]
        r.period = began[-1] if began else life[0]
        if not began:
            _check_held(r, periods)


def _check_held(r: Request, periods: list[Period]) -> None:
    """A request placed on an instance before it began waited for migrations to free its
    GPUs: it began the instant the last instance migrating off its server left."""
    began = r.period.row.allocated_s
    assert any(
        p.row.end == "migrated" and p.row.server == r.server and p.row.ended_s == began
        for p in periods
    ), "placed before its instance began, held by nothing"


def _check_request(r: Request, config: ClusterConfig) -> None:
    row = r.period.row
    assert r.server == row.server, "a request on another server than its instance"
    assert r.placed <= row.ended_s + EPS, "placed after its instance ended"
    if r.tier == "warm":
        assert row.ready_s <= r.placed + EPS, "warm before it was ready"
    else:
        assert r.placed <= row.ready_s + EPS, "placed cold on a ready instance"
        assert r.tier == row.tier, "a request's tier is not its instance's"
    assert r.first >= row.ready_s - EPS, "a first token before its instance was ready"
    prefill = config.models[r.model].prefill_s(r.input_tokens)
    _at_least(r.prefill_s, prefill, "a prefill beat its model")


def _check_pipelined(r: Request, config: ClusterConfig) -> bool:
    """Whether `r`, first served by a cold start of an engine that executes while
    loading, had its prefill run behind the load: its first token then came once the
    compute caught up with the load's last phase (at least that phase's start plus the
    prefill, and its end plus the last layer's share) and no later than a whole prefill
    after it, exactly the former when the load ran alone; and its start-up is the wait
    for its first token less a prefill. Not pipelined (a pre-warm's, joined later), the
    plain rule holds instead."""
    period, row = r.period, r.period.row
    if period.kind != "start" or row.tier == "peer" or not config.pipelined(r.model):
        return False
    spec = config.models[r.model]
    p, end = spec.prefill_s(r.input_tokens), row.ready_s
    last = row.load_s - (row.download_s if period.download else 0.0)
    earliest = max(end + p / spec.layers, end - last + p)
    if not earliest - EPS <= r.first <= end + p + EPS:
        return False
    if period.alone:
        _close(r.first, earliest, "a prefill behind a load alone")
    wait = max(r.placed, r.first - p) - r.placed
    return abs(r.startup_s - wait) <= EPS * max(1.0, wait)


def _check_end(r: Request, periods: list[Period]) -> None:
    """A request that stayed ended before its instance did; one that migrated left its
    first instance by migration, ended after it and the pause, on another instance of its
    model that lived until then (moved once, one ready when the source left)."""
    row = r.period.row
    if not r.migrations:
        assert r.end <= row.ended_s + EPS, "served after its instance ended"
        return
    assert row.end == "migrated", "moved off an instance that did not migrate"
    assert r.end >= row.ended_s + r.migration_pause_s - EPS, "ended before its pause"
    assert any(
        p.row.model == r.model
        and p.row.instance != r.instance
        and p.row.allocated_s <= r.end
        and p.row.ended_s >= r.end - EPS
        and (r.migrations > 1 or p.row.ready_s <= row.ended_s + EPS)
        for p in periods
    ), "a migrated request ended on no instance of its model"


def _columns(record: type) -> list[str]:
    """The table's columns a record holds: its fields, but the ones the check adds."""
    return [f.name for f in fields(record) if f.name != "period"]


def _at_least(value: float, least: float, what: str) -> None:
    assert value >= least * (1 - RTOL) - EPS, f"{what}: {value} < {least}"


def _close(value: float, expected: float, what: str) -> None:
    assert abs(value - expected) <= RTOL * abs(expected) + EPS, f"{what}: {value} != {expected}"
