"""The event loop's glue: arrivals, routing, cold starts, keep-alive, waiting requests.

A request joins a warm (or starting) instance of its model with room in its batch; else,
if no request of its model is already waiting, the policy decides where a new instance
starts, or that it waits. Waiting requests are retried, oldest model queue first,
whenever capacity frees up: a batch slot, or an instance going idle (its GPUs can be
reclaimed). Events per request: its arrival, its prefill and its finish, plus a startup,
a load and a keep-alive timer per cold start.
"""

import time
from collections import deque
from collections.abc import Callable

import numpy as np
import pandas as pd

from policies import get_policy
from policies.base import Request, Start
from sim.clock import Clock
from sim.cluster import Cluster
from sim.config import ClusterConfig
from sim.instance import WARM, Instance
from sim.loading import CheckpointLoad
from sim.request_table import RequestTable


class Simulation:
    def __init__(
        self,
        config: ClusterConfig,
        trace: pd.DataFrame,
        policy: str,
        rng: np.random.Generator,
        progress: Callable[[int, int], None] | None = None,
    ) -> None:
        self.config = config
        self.clock = Clock()
        self.cluster = Cluster(config, self.clock)
        self.policy = get_policy(policy)(rng)
        self.table = RequestTable(trace, list(config.models))
        self._model_names = list(config.models)
        self._waiting: dict[str, deque[int]] = {}  # per model, FIFO; insertion = first waiter
        self._draining = False
        self._progress = progress
        self.loads_by_tier = {"dram": 0, "ssd": 0, "remote": 0}
        self.wall_s = 0.0

    # --- arrivals and routing ---

    def run(self) -> None:
        started = time.perf_counter()
        if self.table.n:
            self.clock.call_in(self.table.arrival[0], self._arrive, 0)
        self.clock.run()
        self.wall_s = time.perf_counter() - started
        pending = np.flatnonzero(self.table.status == 0)
        if len(pending):
            raise RuntimeError(
                f"simulation ended with {len(pending)} unfinished requests "
                f"(first: #{pending[0]}); this is a bug in thaw"
            )

    def _arrive(self, i: int) -> None:
        nxt = i + 1
        if nxt < self.table.n:
            self.clock.call_in(self.table.arrival[nxt] - self.clock.now, self._arrive, nxt)
        if self._progress is not None and (nxt % 1024 == 0 or nxt == self.table.n):
            self._progress(nxt, self.table.n)
        model = self._model_names[self.table.model[i]]
        if model in self._waiting or not self._route(i, model):
            self._waiting.setdefault(model, deque()).append(i)

    def _route(self, i: int, model: str) -> bool:
        """Join an instance with room or start one; False if the request must wait."""
        instance = self._instance_with_room(model)
        if instance is not None:
            self._join(i, instance, "warm" if instance.state == WARM else instance.tier)
            return True
        t = self.table
        request = Request(
            i, model, float(t.arrival[i]), int(t.input_tokens[i]), int(t.output_tokens[i])
        )
        decision = self.policy.place(request, self.cluster)
        if not isinstance(decision, Start):
            return False
        instance = self._launch(model, decision.server)
        self._join(i, instance, instance.tier, decision.estimate_s)
        return True

    def _instance_with_room(self, model: str) -> Instance | None:
        """The least loaded warm instance with room, else the earliest starting one."""
        best = None
        for instance in self.cluster.instances[model]:
            if not instance.has_room:
                continue
            if instance.state == WARM:
                if best is None or best.state != WARM or instance.load < best.load:
                    best = instance
            elif best is None:
                best = instance
        return best

    def _join(self, i: int, instance: Instance, tier: str, estimate_s: float = np.nan) -> None:
        if instance.keep_alive is not None:  # idle and counting down, not just emptied
            self.cluster.mark_busy(instance)
            instance.keep_alive.cancel()
            instance.keep_alive = None
        self.table.placed(i, self.clock.now, instance.server, tier, estimate_s)
        instance.admit(i, int(self.table.input_tokens[i]), int(self.table.output_tokens[i]))

    # --- cold starts ---

    def _launch(self, model: str, server: int) -> Instance:
        """Start an instance: fixed start-up cost, then the checkpoint load, then warm."""
        spec = self.config.models[model]
        load = CheckpointLoad(self.cluster.servers[server], spec, spec.gpus)
        instance = Instance(self.clock, self, spec, server, load.tier)
        self.cluster.place(instance)
        self.loads_by_tier[load.tier] += 1
        self.clock.call_in(self.config.instance_startup_s, load.start, instance.ready)
        return instance

    # --- what instances report ---

    def first_token(self, instance: Instance, request: int) -> None:
        self.table.first_token(request, self.clock.now, instance.ready_at)

    def request_done(self, instance: Instance, request: int) -> None:
        self.table.done(request, self.clock.now)
        self._drain()

    def became_idle(self, instance: Instance) -> None:
        self.cluster.mark_idle(instance)
        instance.keep_alive = self.clock.call_in(self.config.keep_alive_s, self._expire, instance)
        self._drain()

    def _expire(self, instance: Instance) -> None:
        instance.keep_alive = None
        self.cluster.stop(instance)

    # --- waiting requests ---

    def _drain(self) -> None:
        """Place waiting requests, the model with the oldest waiter first, while any fits."""
        if self._draining or not self._waiting:
            return
        self._draining = True
        try:
            for model in sorted(self._waiting, key=lambda m: self._waiting[m][0]):
                queue = self._waiting[model]
                while queue and self._route(queue[0], model):
                    queue.popleft()
                if not queue:
                    del self._waiting[model]
        finally:
            self._draining = False
