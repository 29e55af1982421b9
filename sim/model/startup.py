"""An instance's start-up, run step by step (`thaw_kernel.stages`).

The stages of a step begin together and the step ends when the last one does; then the
next step begins. The load is the tiered, link-shared `CheckpointLoad`; a CPU stage is a
flow of its CPU-seconds over the server's host cores (`Server.cores`, a fluid model as
the links are, each flow capped at one core, so k concurrent stages on c cores each
progress at min(1, c / k), or at most 1 / (1 + s) of a core in any company where the
group sets `startup_company_slowdown` s); a fixed stage is a timer. A run of fixed steps is
folded into the delay of the next step, whose flows are then planned on their resources
(`ServerLinks.start_in`), so estimates made meanwhile see them coming: the default
start-up (fixed cost, then load) thus schedules exactly the events it always did.

The runtime's start (`runtime_s`) ends where the load's step begins, or later where
stages beside the load outlast that: what a real engine stamps as "started", and what
the instance log keeps, since a load beside the runtime hides it in the step's end.
"""

import math
from collections.abc import Callable

from sim.model.clock import Clock
from sim.model.loading import CheckpointLoad
from sim.model.server import STARTUP_CPU, Server
from thaw_kernel.stages import COPY, CPU, FIXED, LOAD, Step


class Startup:
    def __init__(
        self,
        clock: Clock,
        server: Server,
        load: CheckpointLoad,
        steps: tuple[Step, ...],
        on_done: Callable[[], None],
    ) -> None:
        self._clock = clock
        self._server = server
        self._load = load
        self._steps = steps
        self._on_done = on_done
        self._step = 0
        self._left = 0  # stages of the current step still running
        self._began = math.nan
        self._runtime_end = math.nan  # set once the load's step is planned

    @property
    def runtime_s(self) -> float:
        """Seconds from the start-up's beginning to the end of its stages before and
        beside the load: final once that step has ended (NaN before it begins, or
        without a load)."""
        return self._runtime_end - self._began

    def begin(self) -> None:
        self._began = self._clock.now
        self._begin_in(0.0)

    def _begin_in(self, delay: float) -> None:
        """Begin step `self._step` in `delay` seconds (folding fixed-only steps)."""
        while self._step < len(self._steps) and all(
            stage.kind == FIXED for stage in self._steps[self._step]
        ):
            delay += max(stage.amount for stage in self._steps[self._step])
            self._step += 1
        if self._step == len(self._steps):
            if delay:
                self._clock.call_in(delay, self._on_done)
            else:
                self._on_done()
            return
        step = self._steps[self._step]
        self._left = len(step)
        done = self._stage_done
        if any(stage.kind == LOAD for stage in step):  # the runtime ends at the earliest here
            self._runtime_end = self._clock.now + delay
            done = self._runtime_stage_done
        for stage in step:
            if stage.kind == LOAD:
                self._load.start_in(delay, self._stage_done)
            elif stage.kind == CPU:
                self._server.cores.start_in(delay, stage.amount, STARTUP_CPU, 1.0, done)
            elif stage.kind == COPY:  # over the instance's own lanes: a timer
                self._clock.call_in(delay + self._load.copy_s, done)
            else:
                self._clock.call_in(delay + stage.amount, done)

    def _runtime_stage_done(self) -> None:
        """A stage beside the load ended: the runtime has run at least until now."""
        self._runtime_end = self._clock.now
        self._stage_done()

    def _stage_done(self) -> None:
        self._left -= 1
        if self._left == 0:
            self._step += 1
            self._begin_in(0.0)
