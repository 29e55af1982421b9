"""Live migration of a running instance, as ServerlessLLM (OSDI '24) does it: by tokens.

To free GPUs on server S, a busy instance there (the source) moves to a new instance of
its model on server T (the target). T starts and loads the checkpoint while S keeps
serving. Then rounds: S sends the tokens its requests hold so far (prompt + generated),
T recomputes their KV cache, and S generates more meanwhile; a round over n tokens takes
`a * n + b` (`RoundCost`). Once a round saw fewer than `stop_tokens` new tokens (or after
`max_rounds`), S stops: the last tokens go over, T recomputes them, and every request
continues on T. The requests see only that final pause. S's GPUs are free from the moment
it stops. If S's requests all finish first, there is nothing left to move: S is simply
released and T stays as an ordinary idle instance.

Requests still waiting for their prefill on S move as they are (their prompts are counted
in the bytes sent, though no time is charged for sending them: nanoseconds a token; T
prefills them). A prefill in progress at the stop is redone on T.
"""

from typing import Protocol

from policies.base import RoundCost
from sim.model.clock import Clock, Timer
from sim.model.instance import WARM, Handover, Instance
from sim.spec import ClusterConfig


def round_cost(config: ClusterConfig, model: str, network: float) -> RoundCost:
    """The cost of a round migrating an instance of `model` over `network` bytes/s (the
    slower of the two servers'): each token's bytes sent, then recomputed by prefill."""
    m = config.migration
    per_token = m.bytes_per_token / network + 1 / config.models[model].prefill_tokens_per_s
    return RoundCost(per_token, m.round_overhead_s, m.stop_tokens, m.max_rounds)


class MigrationEvents(Protocol):
    def source_left(self, migration: "Migration") -> None:
        """The source is stopped and its GPUs are free."""

    def migration_done(self, migration: "Migration", moved: list[Handover], pause_s: float) -> None:
        """`moved` continue on the target after a pause of `pause_s` (none moved if the
        source emptied first)."""


class Migration:
    def __init__(
        self,
        clock: Clock,
        events: MigrationEvents,
        source: Instance,
        target: Instance,
        cost: RoundCost,
        bytes_per_token: float,
        waiting: Instance,
    ) -> None:
        self._clock = clock
        self._events = events
        self.source = source
        self.target = target
        self.waiting = waiting  # the instance that gets the source's GPUs
        self._cost = cost
        self._bytes_per_token = bytes_per_token
        self._sent: dict[int, float] = {}  # context tokens the target holds, per request
        self._timer: Timer | None = None
        self.rounds = 0
        self.finished = False
        source.migrating = True
        target.reserved = True

    def target_ready(self) -> None:
        """The target's checkpoint is loaded: start the rounds."""
        if not self.finished:
            self._round(self._new_tokens())

    def source_emptied(self) -> None:
        """Every request on the source finished: release it, keep the target as it is."""
        if self._timer is not None:
            self._timer.cancel()
        self.finished = True
        self.source.detach()
        self._events.source_left(self)
        if self.target.state == WARM:
            self.target.adopt([])
        else:
            self.target.reserved = False
        self._events.migration_done(self, [], 0.0)  # the target takes requests now

    def _new_tokens(self) -> float:
        """Tokens the source holds that the target lacks; marks them as sent."""
        held = self.source.kv_tokens()
        new = sum(tokens - self._sent.get(r, 0.0) for r, tokens in held.items())
        self._sent = held
        return new

    def _round(self, tokens: float) -> None:
        self.rounds += 1
        self._timer = self._clock.call_in(self._cost.round_s(tokens), self._round_end)

    def _round_end(self) -> None:
        self._timer = None
        new = self._new_tokens()
        if new < self._cost.stop_tokens or self.rounds >= self._cost.max_rounds:
            self._stop(new)
        else:
            self._round(new)

    def _stop(self, tokens: float) -> None:
        self.finished = True
        moved = self.source.detach()
        self._events.source_left(self)
        pause_s = self._cost.round_s(tokens)
        self._clock.call_in(pause_s, self._resume, moved, pause_s)

    def _resume(self, moved: list[Handover], pause_s: float) -> None:
        self.target.adopt(moved)
        self._events.migration_done(self, moved, pause_s)

    def bytes_sent(self, h: Handover) -> float:
        """Bytes that went over for request `h`: its whole context, or its prompt."""
        tokens = h.prompt_tokens if h.remaining is None else self._sent[h.request]
        return tokens * self._bytes_per_token
