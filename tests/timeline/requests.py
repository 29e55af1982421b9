"""Requests joined to the awake period they were placed in, checked against it."""

from dataclasses import dataclass

import pandas as pd

from sim.spec import ClusterConfig

from .records import EPS, Period, at_least, close, columns


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
    rows = [Request(*r) for r in done[columns(Request)].itertuples(index=False)]
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
    at_least(r.prefill_s, prefill, "a prefill beat its model")


def _check_pipelined(r: Request, config: ClusterConfig) -> bool:
    """Whether `r`, first served by a cold start of an engine that executes while
    loading, had its prefill run behind the load (from a tier or down a chain): its first
    token then came once the compute caught up with the load's last phase (at least that
    phase's start plus the prefill, and its end plus the last layer's share) and no later
    than a whole prefill after it, exactly the former when a load from a tier ran alone
    (a chain's receiver that joined mid-stream gets its first layers last); and its
    start-up is the wait for its first token less a prefill. Not pipelined (a pre-warm's
    first, even joined while it loaded, whose first token may fall in that window too),
    the plain rule holds instead."""
    period, row = r.period, r.period.row
    if period.kind != "start" or row.prewarm or not config.pipelined(r.model):
        return False
    spec = config.models[r.model]
    p, end = spec.prefill_s(r.input_tokens), row.ready_s
    last = row.load_s - (row.download_s if period.download else 0.0)
    earliest = max(end + p / spec.layers, end - last + p)
    if not earliest - EPS <= r.first <= end + p + EPS:
        return False
    if period.alone:
        close(r.first, earliest, "a prefill behind a load alone")
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
