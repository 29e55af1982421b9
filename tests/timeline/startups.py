"""Loads, start-ups, wakes and the hosts' cores against what each period must show."""

import math

from .periods import shares_cores
from .records import EPS, RTOL, Period, at_least, close


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
        at_least(row.load_s, sum(period.phases_s), "a load beat its slowest links")
        if period.download:
            at_least(row.download_s, period.phases_s[0], "a download beat its links")
            at_least(row.load_s - row.download_s, period.phases_s[1], "a load beat the SSD")
        if period.alone:
            close(row.load_s, sum(period.phases_s), "a load alone took other than its links")
            if period.download:
                close(row.download_s, period.phases_s[0], "a download alone")


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
    at_least(row.load_s, period.weights / hop, "a peer load beat its hop")


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
        at_least(took, period.least, f"a {period.kind} beat its stages")
        if period.kind == "start":
            if not (period.cores and shares_cores(period, periods)):
                close(took, period.least, "a start-up alone took other than its steps")
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
