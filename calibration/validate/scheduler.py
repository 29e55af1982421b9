"""The real replay's scheduler: arrivals on the wall clock, the simulator's routing rules,
the simulator's policy code, and real instance processes (`calibration.validate.instance_process`).

Routing is `sim.engine.simulator`'s: a request joins the least occupied warm instance of its model
with room (the oldest among equals), else the oldest starting one with room; else, if no
request of its model already waits, the policy places a new instance or says wait.
Waiting requests are retried, the model with the oldest waiter first, whenever a request
finishes or an instance goes idle. An idle instance stays warm `keep_alive_s`, and is
reclaimed earlier (oldest idle first) when a new instance needs its GPU. A decision that
migrates busy instances away (`calibration.validate.replay_migration`) starts each one's target
on its destination at once, and the new instance once they have left, its requests
waiting for it meanwhile. Where the scenario has checkpoint stores
(`calibration.validate.store_process`, one per server, up before the first arrival), a
cold start from SSD or the remote store orders its server's store to read the
checkpoint into DRAM as its instance spawns, and the instance, held once started, loads
that copy when the store has it. Every time is `time.monotonic()`, shared by all the
processes, from the replay's start.
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
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd

from calibration.validate.deleter import Deleter
from calibration.validate.devices import server_device
from calibration.validate.handle import STOPPED, WARM, Handle
from calibration.validate.records import Records
from calibration.validate.replay_migration import Migration
from calibration.validate.scenario import (
    MODELS,
    Layout,
    Scenario,
    reset_ssds,
    share_store_pages,
)
from calibration.validate.view import Books
from policies import get_policy
from policies.base import Request, Running, Start
from sim.spec import ClusterConfig

LEAD_S = 1.0  # the first arrival's distance from the start, for the loop to settle


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
        config: ClusterConfig,
        store_url: str | None = None,
    ) -> None:
        """`store_url`: the remote store's (`calibration.remote`), with `scenario.remote`."""
        self.scenario = scenario
        self.store_url = store_url
        self.layout = layout
        self.trace = trace.reset_index(drop=True)
        self.policy = get_policy(policy)(rng)
        self.config = config
        placement = {name: scenario.ssd_servers(rank) for rank, name in enumerate(sizes)}
        self.books = Books(
            scenario.servers,
            scenario.gpus,
            sizes,
            placement,
            (scenario.dram_bytes, scenario.ssd_bytes or sum(sizes.values())),
            scenario.remote,
            config,
            self._evicted,
        )
        self.books.running_on = self._running
        self.records = Records(len(trace))
        self._migrations: dict[Handle, Migration] = {}  # by source and by target
        self._instances: list[Handle] = []
        self._idle: list[dict[Handle, None]] = [{} for _ in range(scenario.servers)]
        self._waiting: dict[str, deque[int]] = {}
        self._timers: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        # An instance's message, or a store's about the instance it reads for; (None,
        # {"server": k}) when server k's store has ended.
        self._inbox: queue.Queue[tuple[Handle | None, dict | None]] = queue.Queue()
        self._stores: list[subprocess.Popen] = []  # by server, with `scenario.store`
        self._done = 0
        self._t0 = 0.0
        self._deleter = Deleter()  # SSD copies, deleted off the loop

    # --- the loop ---

    def run(self, limit_s: float) -> Records:
        """Replay to the last request's end; RuntimeError past `limit_s` seconds."""
        for server in range(self.scenario.servers):
            shutil.rmtree(self.layout.dram / f"dram{server}", ignore_errors=True)
        reset_ssds(self.scenario, self.layout)
        # Like the profile's start-up figure, which sets its first run apart: no replayed
        # start-up should be the one that reads torch's libraries from disk.
        subprocess.run(
            [sys.executable, "-c", "import calibration.validate.instance_process"], check=True
        )
        if self.scenario.store:
            self._open_stores()
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
        for store in self._stores:
            store.kill()  # a read in flight is of no more use
        for process in [i.process for i in self._instances] + self._stores:
            if process is not None:
                process.wait(timeout=60)
        self._deleter.close()

    # --- the checkpoint stores ---

    def _open_stores(self) -> None:
        """One store per server, each up (torch imported) before this returns."""
        for server in range(self.scenario.servers):
            stderr = open(self.layout.work / f"store-{server}.err", "w")  # noqa: SIM115
            store = subprocess.Popen(
                [sys.executable, "-m", "calibration.validate.store_process"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
            stderr.close()
            self._stores.append(store)
        for server, store in enumerate(self._stores):
            assert store.stdout is not None
            if not store.stdout.readline():
                raise RuntimeError(f"checkpoint store {server} died: {self._last_error(server)}")
            threading.Thread(target=self._listen_to_store, args=(server,), daemon=True).start()

    def _listen_to_store(self, server: int) -> None:
        """Pass a store's messages on as the instance's they are about; at its end, (None,
        {"server": server})."""
        stdout = self._stores[server].stdout
        assert stdout is not None
        for line in stdout:
            message = json.loads(line)
            self._inbox.put((self._instances[message["load"]], message))
        self._inbox.put((None, {"server": server}))

    def _stored_by_store(self, instance: Handle) -> bool:
        """Whether the instance's checkpoint is read into DRAM by its server's store."""
        return self.scenario.store and instance.tier != "dram"

    def _last_error(self, server: int) -> str:
        error = (self.layout.work / f"store-{server}.err").read_text()
        return (error.strip().splitlines() or ["no output"])[-1]

    # --- arrivals and routing (as sim.engine.simulator) ---

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
            if decision.preempt:
                raise RuntimeError(f"policy {self.policy.name}: the real replay cannot preempt")
            leaving = [self._movable(decision.server, move.instance) for move in decision.migrate]
            instance = self._launch(model, decision.server, leaving=len(leaving))
            for move, source in zip(decision.migrate, leaving, strict=True):
                self._migrate(source, move.destination, instance)
            self.records.estimate_s[i] = decision.estimate_s
        self._join(i, instance)
        return True

    def _room(self, model: str) -> Handle | None:
        """The least occupied warm instance with room (oldest first), else the oldest
        starting one with room."""
        live = [
            i
            for i in self._instances
            if i.model == model
            and i.state != STOPPED
            and not (i.migrating or i.reserved)
            and i.occupancy < self.scenario.max_batch
        ]
        warm = [i for i in live if i.state == WARM]
        if warm:
            return min(warm, key=lambda i: (i.occupancy, i.id))
        return min(live, key=lambda i: i.id, default=None)

    def _join(self, i: int, instance: Handle) -> None:
        if instance in self._idle[instance.server]:
            self._set_idle(instance, False)
        self.records.placed(i, self.now(), instance.server, instance.tier, instance.id)
        instance.requests.add(i)
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

    def _launch(self, model: str, server: int, leaving: int = 0) -> Handle:
        """A new instance of `model` on `server`: spawned now, on a free GPU (an idle
        instance's, reclaimed), or once the `leaving` instances migrating off have left."""
        if not leaving:
            self._take_gpu(server)
        tier = self.books.fastest_tier(server, model)
        if tier != "remote":  # the copy it loads from stays until its load is done
            cache = self.books.dram[server] if tier == "dram" else self.books.ssd[server]
            cache.touch(model)
            cache.pin(model)
        instance = Handle(len(self._instances), model, server, tier, leaving=leaving)
        self.records.created(model, server, tier, self.scenario.store)
        self._instances.append(instance)
        if not leaving:
            self._spawn(instance)
        return instance

    def _take_gpu(self, server: int) -> None:
        while self.books.free[server] < 1 and self._idle[server]:
            self._stop(next(iter(self._idle[server])))
        if self.books.free[server] < 1:
            raise RuntimeError(f"policy {self.policy.name}: server {server} has no free GPU")
        self.books.free[server] -= 1
        self.books.reindex(server)

    def _spawn(self, instance: Handle) -> None:
        """Start the instance's process (and, with stores, order its checkpoint from its
        server's), and pass it the commands that waited for it."""
        server, model, tier = instance.server, instance.model, instance.tier
        dram, ssd = self.layout.dram_copy(server, model), self.layout.ssd(server, model)
        download = None
        if tier == "remote":
            download = {"url": self.store_url, "server": server, "name": model}
        if self._stored_by_store(instance):
            instance.held = True
            order = {"load": instance.id, "checkpoint": str(ssd), "install": str(dram)}
            self._order(server, order | {"download": download})
            spec = instance_spec(self.scenario, server, model, dram, None) | {"hold": True}
        elif tier == "dram":
            spec = instance_spec(self.scenario, server, model, dram, None)
        else:
            spec = instance_spec(self.scenario, server, model, ssd, dram, download)
        stderr = open(self.layout.work / f"instance-{instance.id}.err", "w")  # noqa: SIM115
        instance.process = subprocess.Popen(
            instance_command(spec),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
        stderr.close()
        self.records.instance_event(instance.id, "spawned", self.now())
        threading.Thread(target=self._listen, args=(instance,), daemon=True).start()
        if not instance.held:
            instance.flush()

    def _order(self, server: int, order: dict) -> None:
        stdin = self._stores[server].stdin
        assert stdin is not None
        stdin.write(json.dumps(order) + "\n")
        stdin.flush()

    def _listen(self, instance: Handle) -> None:
        """Pass the instance's messages on; None once it has ended (or said nonsense, which
        is then in its error file), so the loop always hears of its end."""
        assert instance.process is not None and instance.process.stdout is not None
        try:
            for line in instance.process.stdout:
                self._inbox.put((instance, json.loads(line)))
        except (json.JSONDecodeError, ValueError) as err:
            with open(self.layout.work / f"instance-{instance.id}.err", "a") as errors:
                errors.write(f"unreadable message from the instance: {err}\n")
        self._inbox.put((instance, None))

    def _handle(self, instance: Handle | None, message: dict | None) -> None:
        if instance is None:
            assert message is not None
            server = message["server"]
            raise RuntimeError(f"checkpoint store {server} died: {self._last_error(server)}")
        if message is None:
            if instance.state != STOPPED:
                error = (self.layout.work / f"instance-{instance.id}.err").read_text()
                last = (error.strip().splitlines() or ["no output"])[-1]
                raise RuntimeError(f"replay instance {instance.id} died: {last}")
            return
        if instance.state == STOPPED:  # a migrated source's answer, crossing its release
            return
        event, t = message["event"], message["t"] - self._t0
        if event in ("started", "downloaded", "loaded", "ready", "stored"):
            self.records.instance_event(instance.id, event, t)
        if event == "began":
            self.records.instance_event(instance.id, "load_began", t)
        elif event == "stored":
            self._stored(instance)
        elif event == "started":
            self.records.instance_event(instance.id, "started_cpu_s", message["cpu_s"])
        if event == "ready":
            self._ready(instance)
        elif event == "downloaded":
            self._downloaded(instance)
        elif event == "loaded" and self._stored_by_store(instance):  # the store's copy, taken
            self._installed(instance)
        elif event == "loaded":
            self._loaded(instance)
        elif event in ("tokens", "recomputed", "resumed"):
            self._migration_event(instance, event, message, t)
        elif event == "installed":
            self._installed(instance)
        elif event == "first":
            i = message["request"]
            self.records.first_token(i, t)
            instance.decoding[i] = (t, int(self.trace["input_tokens"][i]) + 1)
        elif event == "done":
            i = message["request"]
            self.records.done(i, t, message["generated"])
            self._done += 1
            instance.requests.discard(i)
            instance.decoding.pop(i, None)
            if not instance.requests:
                if instance.migrating:
                    self._migrations[instance].source_emptied()
                else:
                    self._set_idle(instance, True)
            self._drain()

    def _installed(self, instance: Handle) -> None:
        """The load's DRAM copy is published: kept (least recently used out), its pages
        then the store's where there is one, or removed (the instance's map of it stays
        until it stops)."""
        server, model = instance.server, instance.model
        if not self.books.dram[server].admit(model, self.books.models[model]):
            shutil.rmtree(self.layout.dram_copy(server, model))
        elif self.scenario.remote:
            share_store_pages(self.layout, server, model)

    def _downloaded(self, instance: Handle) -> None:
        """The checkpoint is on the server's SSD: held there (least recently used out), and
        pinned until the load is done; where the SSD has no room, read once and dropped."""
        ssd = self.books.ssd[instance.server]
        instance.kept = ssd.admit(instance.model, self.books.models[instance.model])
        if instance.kept:
            ssd.pin(instance.model)

    def _stored(self, instance: Handle) -> None:
        """The store has the checkpoint in DRAM: its SSD copy is free to go, and the
        instance may load the DRAM copy (once it has started)."""
        self._loaded(instance)
        instance.release()

    def _loaded(self, instance: Handle) -> None:
        """A load from SSD (downloaded or not) is done: its copy may be evicted now."""
        if instance.tier == "ssd" or (instance.tier == "remote" and instance.kept):
            self.books.ssd[instance.server].unpin(instance.model)
        elif instance.tier == "remote":  # downloaded, never admitted: read once, dropped
            self._deleter.delete(self.layout.ssd(instance.server, instance.model))

    def _ready(self, instance: Handle) -> None:
        instance.state = WARM
        if instance.tier == "dram":
            self.books.dram[instance.server].unpin(instance.model)
        if instance.reserved:
            self._migrations[instance].target_ready()
        elif not instance.requests:  # a target whose source emptied while it started
            self._set_idle(instance, True)
            self._drain()

    def _set_idle(self, instance: Handle, idle: bool) -> None:
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

    def _expire(self, instance: Handle, epoch: int) -> None:
        if instance in self._idle[instance.server] and instance.idle_epoch == epoch:
            self._stop(instance)

    # --- migrations (as sim.engine.simulator's) ---

    def _running(self, server: int) -> list[Running]:
        """The busy warm instances on `server` a decision may migrate: the context tokens
        each holds are estimated from its messages, each decoding request's tokens at its
        first token (or its arrival on a migration's target) plus the profile's decode
        steps since."""
        now, out = self.now(), []
        for instance in self._instances:
            if instance.server != server or not instance.movable:
                continue
            spec = self.config.models[instance.model]
            step_s = spec.decode_step(len(instance.decoding)) if instance.decoding else 0.0
            tokens = 0.0
            for i, (since, held) in instance.decoding.items():
                most = int(self.trace["input_tokens"][i] + self.trace["output_tokens"][i])
                tokens += min(most, held + (now - since) / step_s)
            out.append(
                Running(instance.id, instance.model, 1, tokens, len(instance.decoding), step_s)
            )
        return out

    def _movable(self, server: int, instance_id: int) -> Handle:
        instance = self._instances[instance_id] if instance_id < len(self._instances) else None
        if instance is None or instance.server != server or not instance.movable:
            raise RuntimeError(
                f"policy {self.policy.name}: instance {instance_id} on server {server} "
                "is not a busy warm instance that can be moved"
            )
        return instance

    def _migrate(self, source: Handle, destination: int, waiting: Handle) -> None:
        """Move `source` to a new instance on `destination`; its GPU goes to `waiting`."""
        target = self._launch(source.model, destination)
        cost = self.books.round_cost(source.model, source.server, destination)
        migration = Migration(source, target, waiting, cost, self)
        self._migrations[source] = self._migrations[target] = migration

    def _migration_event(self, instance: Handle, event: str, message: dict, t: float) -> None:
        """Pass a message on to the migration the instance takes part in. One from a
        migration that ended (a target's answers after its source emptied) finds none, or
        one where the instance plays the other part (that target, migrating now)."""
        migration = self._migrations.get(instance)
        if migration is None:
            return
        if event == "tokens" and instance is migration.source:
            migration.tokens(message, t)
        elif event == "recomputed" and instance is migration.target:
            migration.recomputed()
        elif event == "resumed" and instance is migration.target:
            migration.resumed(t)

    def source_left(self, migration: Migration) -> None:
        source, target, waiting = migration.source, migration.target, migration.waiting
        del self._migrations[source]
        target.requests |= source.requests
        source.requests.clear()
        self._stop(source)
        waiting.leaving -= 1
        if not waiting.leaving:
            self._take_gpu(waiting.server)
            self._spawn(waiting)

    def migration_done(self, migration: Migration, moved: dict[int, int], pause_s: float) -> None:
        target = migration.target
        del self._migrations[target]
        now = self.now()
        for i, tokens in moved.items():
            self.records.migrated(i, pause_s, migration.rounds)
            if tokens:  # decoding: the target recomputed its context and took one more token
                target.decoding[i] = (now, tokens + 1)
        if target.state == WARM and not target.requests:
            self._set_idle(target, True)
        self._drain()

    def _stop(self, instance: Handle) -> None:
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
        if instance.process is not None:
            instance.process.kill()

    def _evicted(self, tier: str, server: int, model: str) -> None:
        if tier == "dram":  # memory: freed at once
            shutil.rmtree(self.layout.dram_copy(server, model), ignore_errors=True)
        else:
            self._deleter.delete(self.layout.ssd(server, model))


def instance_spec(
    scenario: Scenario,
    server: int,
    model: str,
    checkpoint: Path,
    install: Path | None,
    download: dict | None = None,
) -> dict:
    """What an instance process of `model` on `server` is told: load `checkpoint` (first
    downloaded there, with `download`), and install it in DRAM at `install` on the way (a
    load from SSD) or not (from DRAM)."""
    fields = asdict(MODELS[model])
    fields.pop("dtype")  # float32, the default
    return {
        "config": fields,
        "checkpoint": str(checkpoint),
        "install": None if install is None else str(install),
        "max_batch": scenario.max_batch,
        "device": server_device(server),
        "download": download,
    }


def instance_command(spec: dict) -> list[str]:
    """The command line that starts an instance process."""
    return [sys.executable, "-m", "calibration.validate.instance_process", json.dumps(spec)]
