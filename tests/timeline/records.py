"""The instance log's rows as the check reads them, what each awake row must show, and the
comparisons every check makes (within a relative 1e-9)."""

import math
from dataclasses import dataclass, field, fields

from sim.spec import ServerGroup

EPS = 1e-9
RTOL = 1e-9


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
    prewarm: bool


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


def columns(record: type) -> list[str]:
    """The table's columns a record holds: its fields, but the ones the check adds."""
    return [f.name for f in fields(record) if f.name != "period"]


def at_least(value: float, least: float, what: str) -> None:
    assert value >= least * (1 - RTOL) - EPS, f"{what}: {value} < {least}"


def close(value: float, expected: float, what: str) -> None:
    assert abs(value - expected) <= RTOL * abs(expected) + EPS, f"{what}: {value} != {expected}"
