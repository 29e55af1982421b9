"""The replay scheduler's side of one live migration, step for step as
`sim.model.migration` runs it.

The target starts on its destination like any instance (a fresh process, the real loader),
reserved: it takes no new request. Once it is ready, rounds: the scheduler asks the source
for a `snapshot` (its decoding requests' tokens so far; it decodes on), passes the tokens
to the target to `recompute`, and when the target has, asks for the next snapshot. The
source applies the stop rule to the tokens it generated during the round that ended
(`token_migration.last_round`, with the cluster's `stop_tokens` and `max_rounds`): then it
stops and hands over every request, and the target `adopt`s them. The pause the moved
requests see runs from the source's stop to the target's `resumed`. If every request on
the source finishes first, the source is released and the target stays an ordinary
instance. The scheduler relays every message: each round pays its latency, and the
source reads a command only between two of its steps.
"""

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from policies.base import RoundCost

if TYPE_CHECKING:
    from calibration.validate.handle import Handle


class MigrationEvents(Protocol):
    def source_left(self, migration: "Migration") -> None:
        """The source stopped: its GPU goes to `waiting`, its requests to the target."""

    def migration_done(self, migration: "Migration", moved: dict[int, int], pause_s: float) -> None:
        """`moved` (request -> context tokens, 0 if not prefilled) continue on the target
        after `pause_s`; none if the source emptied."""


@dataclass(eq=False)
class Migration:
    """`source` moving to `target`, its GPU promised to `waiting`."""

    source: "Handle"
    target: "Handle"
    waiting: "Handle"
    cost: RoundCost
    events: MigrationEvents
    rounds: int = 0
    finished: bool = False
    stopped_at: float | None = None  # when the source stopped (None: not, or it emptied)
    moved: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.source.migrating = True
        self.target.reserved = True

    def target_ready(self) -> None:
        if not self.finished:
            self._snapshot()

    def source_emptied(self) -> None:
        """Every request on the source finished: release it, free the target."""
        self.finished = True
        self.events.source_left(self)
        self.target.reserved = False
        self.target.send({"adopt": [], "waiting": []})  # drops what it recomputed
        self.events.migration_done(self, {}, 0.0)

    def tokens(self, message: dict, t: float) -> None:
        """The source's snapshot: the next round, or its stop and the handover."""
        if self.finished:
            return
        if not message["stopped"]:
            self.rounds += 1
            self.target.send({"recompute": message["requests"]})
            return
        self.finished, self.stopped_at = True, t
        self.moved = {h["request"]: len(h["tokens"]) for h in message["requests"]}
        self.moved |= {h["request"]: 0 for h in message["waiting"]}
        self.events.source_left(self)
        self.target.send({"adopt": message["requests"], "waiting": message["waiting"]})

    def recomputed(self) -> None:
        """The target recomputed the round's tokens: the next snapshot."""
        if not self.finished:
            self._snapshot()

    def resumed(self, t: float) -> None:
        """The target recomputed the last tokens: the moved requests decode on."""
        if self.stopped_at is not None:  # else the answer to an emptied source's release
            self.target.reserved = False
            self.events.migration_done(self, self.moved, t - self.stopped_at)

    def _snapshot(self) -> None:
        command = {
            "threshold": self.cost.stop_tokens,
            "rounds": self.rounds,
            "max_rounds": self.cost.max_rounds,
        }
        self.source.send({"snapshot": command})
