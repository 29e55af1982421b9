"""The replay scheduler's handle on one real instance process: where it runs, what it
holds, and the commands it has not yet been able to send (before its process is spawned,
or while it is held, waiting for its checkpoint store)."""

import json
import subprocess
from dataclasses import dataclass, field
from enum import StrEnum


class State(StrEnum):
    """Where a real instance is, as the scheduler sees it."""

    STARTING = "starting"  # spawned, or waiting for its GPU, not yet ready
    WARM = "warm"  # ready: serving or idle
    STOPPED = "stopped"


STARTING, WARM, STOPPED = State


@dataclass(eq=False)
class Handle:
    """The scheduler's handle on a real instance process (`instance_process`). Its process
    is spawned once its GPU is free: at once, or once the instances migrating off it have
    left."""

    id: int
    model: str
    server: int
    tier: str
    process: subprocess.Popen | None = None
    state: State = STARTING
    requests: set[int] = field(default_factory=set)  # the requests it holds
    # Per decoding request: when it last held how many context tokens (prompt and output).
    decoding: dict[int, tuple[float, int]] = field(default_factory=dict)
    idle_epoch: int = 0  # bumped on every idle spell, so a stale keep-alive is ignored
    leaving: int = 0  # instances still to migrate off its server before it spawns
    migrating: bool = False  # a migration's source: takes no new request
    reserved: bool = False  # a migration's target: takes no new request until it resumes
    unsent: list[dict] = field(default_factory=list)  # commands for a process not yet spawned
    kept: bool = False  # a download the server's SSD held (else dropped after the load)
    held: bool = False  # spawned with `hold`: no command until `release`

    @property
    def occupancy(self) -> int:
        return len(self.requests)

    @property
    def movable(self) -> bool:
        """Busy and warm, not already part of a migration (as `sim.model.instance`'s)."""
        return self.state == WARM and bool(self.requests) and not (self.migrating or self.reserved)

    def send(self, command: dict) -> None:
        if self.process is None or self.held:
            self.unsent.append(command)
            return
        self._write(command)

    def flush(self) -> None:
        """Send the commands that waited for the process, or for its release."""
        for command in self.unsent:
            self._write(command)
        self.unsent.clear()

    def release(self) -> None:
        """Let a held process load (any line does), then send what waited."""
        self.held = False
        self._write({})
        self.flush()

    def _write(self, command: dict) -> None:
        assert self.process is not None and self.process.stdin is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
