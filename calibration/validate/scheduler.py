"""The real replay's scheduler: arrivals on the wall clock, the simulator's routing rules,
the simulator's policy code, and real instance processes (`calibration.validate.instance`).

Routing is `sim.simulator`'s: a request joins the least occupied warm instance of its model
with room (the oldest among equals), else the oldest starting one with room; else, if no
request of its model already waits, the policy places a new instance or says wait.
Waiting requests are retried, the model with the oldest waiter first, whenever a request
finishes or an instance goes idle. An idle instance stays warm `keep_alive_s`, and is
reclaimed earlier (oldest idle first) when a new instance needs its GPU. Every time is
`time.monotonic()`, shared by all the processes, from the replay's start.
"""

import heapq
import itertools
import json
import queue
import shutil
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from calibration.validate.records import Records
from calibration.validate.scenario import MODELS, Layout, Scenario
from calibration.validate.view import Books
from policies import get_policy
from policies.base import Request, Start

STARTING, WARM, STOPPED = "starting", "warm", "stopped"
LEAD_S = 1.0  # the first arrival's distance from the start, for the loop to settle


@dataclass(eq=False)
class Instance:
    """A real instance process, as the scheduler tracks it (`occupancy`: requests it holds)."""

    id: int
    model: str
    server: int
    tier: str
    process: subprocess.Popen
    state: str = STARTING
    occupancy: int = 0
    idle_epoch: int = 0  # bumped on every idle spell, so a stale keep-alive is ignored

    def send(self, command: dict) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()


class Replay:
    """One policy's replay of `trace` on the real cluster in `layout`."""

    def __init__(
        self,
        scenario: Scenario,
        layout: Layout,
        sizes: dict[str, int],
        trace: pd.DataFrame,
        policy: str,
        rng: np.random.Generator,
        derived: dict[str, float],
    ) -> None:
        self.scenario = scenario
        self.layout = layout
        self.trace = trace.reset_index(drop=True)
        self.policy = get_policy(policy)(rng)
        self.books = Books(
            scenario.servers, scenario.gpus, sizes, scenario.dram_bytes, derived, self._evicted
        )
        self.records = Records(len(trace))
        self._instances: list[Instance] = []
        self._idle: list[dict[Instance, None]] = [{} for _ in range(scenario.servers)]
        self._waiting: dict[str, deque[int]] = {}
        self._timers: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._inbox: queue.Queue[tuple[Instance, dict | None]] = queue.Queue()
        self._done = 0
        self._t0 = 0.0

    # --- the loop ---

    def run(self, limit_s: float) -> Records:
        """Replay to the last request's end; RuntimeError past `limit_s` seconds."""
        for server in range(self.scenario.servers):
            shutil.rmtree(self.layout.dram / f"dram{server}", ignore_errors=True)
        # Like the profile's start-up figure, which sets its first run apart: no replayed
        # start-up should be the one that reads torch's libraries from disk.
        subprocess.run([sys.executable, "-c", "import calibration.validate.instance"], check=True)
        self._t0 = time.monotonic() + LEAD_S
        self.books.clock = self.now
        for i, arrival in enumerate(self.trace["arrival_s"]):
            self._at(float(arrival), lambda i=i: self._arrive(i))
        try:
            while self._done < len(self.trace):
                if self.now() > limit_s:
                    raise RuntimeError(f"the real replay ran past {limit_s:.0f} s")
                self._step()
        finally:
            self._shut_down()
        return self.records

    def now(self) -> float:
        return time.monotonic() - self._t0

    def _at(self, when: float, action: Callable[[], None]) -> None:
        heapq.heappush(self._timers, (when, next(self._seq), action))

    def _step(self) -> None:
        """Run the timers due, else wait for an instance's message until the next one."""
        if self._timers and self._timers[0][0] <= self.now():
            heapq.heappop(self._timers)[2]()
            return
        timeout = self._timers[0][0] - self.now() if self._timers else 1.0
        try:
            instance, message = self._inbox.get(timeout=max(0.0, timeout))
        except queue.Empty:
            return
        self._handle(instance, message)

    def _shut_down(self) -> None:
        for instance in self._instances:
            if instance.state != STOPPED:
                self._stop(instance)
        for instance in self._instances:
            instance.process.wait(timeout=60)

    # --- arrivals and routing (as sim.simulator) ---

    def _arrive(self, i: int) -> None:
        self.records.arrival[i] = float(self.trace["arrival_s"][i])
        model = str(self.trace["model"][i])
        if model in self._waiting or not self._route(i, model):
            self._waiting.setdefault(model, deque()).append(i)

    def _route(self, i: int, model: str) -> bool:
        instance = self._room(model)
        if instance is None:
            row = self.trace.iloc[i]
            request = Request(
                i, model, float(row.arrival_s), int(row.input_tokens), int(row.output_tokens)
            )
            decision = self.policy.place(request, self.books)
            if not isinstance(decision, Start):
                return False
            if decision.migrate or decision.preempt:
                raise RuntimeError(f"policy {self.policy.name}: the real replay cannot free GPUs")
            instance = self._launch(model, decision.server)
            self.records.estimate_s[i] = decision.estimate_s
        self._join(i, instance)
        return True

    def _room(self, model: str) -> Instance | None:
        """The least occupied warm instance with room (oldest first), else the oldest
        starting one with room."""
        live = [
            i
            for i in self._instances
            if i.model == model and i.state != STOPPED and i.occupancy < self.scenario.max_batch
        ]
        warm = [i for i in live if i.state == WARM]
        if warm:
            return min(warm, key=lambda i: (i.occupancy, i.id))
        return min(live, key=lambda i: i.id, default=None)

    def _join(self, i: int, instance: Instance) -> None:
        if instance in self._idle[instance.server]:
            self._set_idle(instance, False)
        self.records.placed(i, self.now(), instance.server, instance.tier, instance.id)
        instance.occupancy += 1
        row = self.trace.iloc[i]
        instance.send(
            {"admit": i, "input": int(row.input_tokens), "output": int(row.output_tokens)}
        )

    def _drain(self) -> None:
        for model in sorted(self._waiting, key=lambda m: self._waiting[m][0]):
            waiting = self._waiting[model]
            while waiting and self._route(waiting[0], model):
                waiting.popleft()
            if not waiting:
                del self._waiting[model]

    # --- instances ---

    def _launch(self, model: str, server: int) -> Instance:
        while self.books.free[server] < 1 and self._idle[server]:
            self._stop(next(iter(self._idle[server])))
        if self.books.free[server] < 1:
            raise RuntimeError(f"policy {self.policy.name}: server {server} has no free GPU")
        self.books.free[server] -= 1
        self.books.reindex(server)
        tier = self.books.fastest_tier(server, model)
        if tier == "dram":
            self.books.dram[server].touch(model)
            self.books.dram[server].pin(model)
        source = (
            self.layout.dram_copy(server, model)
            if tier == "dram"
            else self.layout.ssd(server, model)
        )
        spec = {
            "config": _config_fields(model),
            "checkpoint": str(source),
            "install": str(self.layout.dram_copy(server, model)) if tier == "ssd" else None,
            "max_batch": self.scenario.max_batch,
        }
        instance_id = len(self._instances)
        stderr = open(self.layout.work / f"instance-{instance_id}.err", "w")  # noqa: SIM115
        process = subprocess.Popen(
            [sys.executable, "-m", "calibration.validate.instance", json.dumps(spec)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
        stderr.close()
        instance = Instance(instance_id, model, server, tier, process)
        self.records.spawned(model, server, tier, self.now())
        self._instances.append(instance)
        threading.Thread(target=self._listen, args=(instance,), daemon=True).start()
        return instance

    def _listen(self, instance: Instance) -> None:
        """Pass the instance's messages on; None once it has ended (or said nonsense, which
        is then in its error file), so the loop always hears of its end."""
        assert instance.process.stdout is not None
        try:
            for line in instance.process.stdout:
                self._inbox.put((instance, json.loads(line)))
        except (json.JSONDecodeError, ValueError) as err:
            with open(self.layout.work / f"instance-{instance.id}.err", "a") as errors:
                errors.write(f"unreadable message from the instance: {err}\n")
        self._inbox.put((instance, None))

    def _handle(self, instance: Instance, message: dict | None) -> None:
        if message is None:
            if instance.state != STOPPED:
                error = (self.layout.work / f"instance-{instance.id}.err").read_text()
                last = (error.strip().splitlines() or ["no output"])[-1]
                raise RuntimeError(f"replay instance {instance.id} died: {last}")
            return
        event, t = message["event"], message["t"] - self._t0
        if event in ("started", "loaded", "ready"):
            self.records.instance_event(instance.id, event, t)
        if event == "ready":
            instance.state = WARM
            if instance.tier == "dram":
                self.books.dram[instance.server].unpin(instance.model)
        elif event == "installed":
            if not self.books.dram[instance.server].admit(
                instance.model, self.books.models[instance.model]
            ):
                shutil.rmtree(self.layout.dram_copy(instance.server, instance.model))
        elif event == "first":
            self.records.first_token(message["request"], t)
        elif event == "done":
            self.records.done(message["request"], t)
            self._done += 1
            instance.occupancy -= 1
            if instance.occupancy == 0:
                self._set_idle(instance, True)
            self._drain()

    def _set_idle(self, instance: Instance, idle: bool) -> None:
        server = instance.server
        if idle:
            self._idle[server][instance] = None
            instance.idle_epoch += 1
            epoch = instance.idle_epoch
            self._at(self.now() + self.scenario.keep_alive_s, lambda: self._expire(instance, epoch))
        else:
            del self._idle[server][instance]
        self.books.idle_gpus[server] += 1 if idle else -1
        self.books.reindex(server)

    def _expire(self, instance: Instance, epoch: int) -> None:
        if instance in self._idle[instance.server] and instance.idle_epoch == epoch:
            self._stop(instance)

    def _stop(self, instance: Instance) -> None:
        """Stop an instance (idle, or any at shutdown): its GPU is free at once.

        Killed, as platforms stop instances: Python's own teardown of torch takes about
        0.4 s of CPU, which on a 2-core machine slowed the start-up it made room for, a
        cost the simulator (and a server with cores to spare) does not have.
        """
        if instance in self._idle[instance.server]:
            self._set_idle(instance, False)
        instance.state = STOPPED
        self.books.free[instance.server] += 1
        self.books.reindex(instance.server)
        self.records.instance_event(instance.id, "stopped", self.now())
        instance.process.kill()

    def _evicted(self, server: int, model: str) -> None:
        shutil.rmtree(self.layout.dram_copy(server, model), ignore_errors=True)


def _config_fields(model: str) -> dict:
    fields = asdict(MODELS[model])
    fields.pop("dtype")  # float32, the default
    return fields
