"""The event loop's glue: arrivals, routing, cold starts, keep-alive, waiting requests.

The keep-alive policy (`sim.keep_alive`) says how long an instance that went idle stays
warm, which idle instance gives up its GPUs first, and when to pre-warm: start an
instance of a model before its next request, through the placement policy and the load
path like any start (but never displacing a running instance), or wake a sleeping engine
if the policy weighs wakes and chooses one.

A request joins a warm (or starting) instance of its model with room in its batch; else,
if engines sleep and the policy does not weigh wakes, it wakes one of its model
(`sim.model.sleepers`); else, if the queue discipline lets it, the policy decides where a new
instance starts, which engine wakes (if it weighs wakes), or that it waits. Waiting
requests are retried whenever capacity frees up: a batch slot, or an instance going idle
(its GPUs can be reclaimed); the queue discipline (`sim.queues`) decides in what order,
and what a reservation hides. Events per request: its arrival, its prefill and its
finish, plus a startup, a load and a keep-alive timer per cold start.

A decision may free GPUs first: by live migration (`sim.model.migration`; the new instance
starts once every instance it displaces has left) or by preemption (the displaced
instances stop at once and their requests go back to the queue, their progress lost; a
preempted request cannot itself trigger a preemption, so preemptions cannot cascade).
"""

import gc
import itertools
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from policies import get_policy
from policies.base import Decision, Request, Start, Wake
from sim.engine.invariants import InvariantError, check_outcome, check_state
from sim.engine.request_table import RequestTable
from sim.keep_alive import make_keep_alive
from sim.keep_alive.base import Idle
from sim.model.clock import Clock, Timer
from sim.model.cluster import Cluster
from sim.model.instance import WARM, Handover, Instance
from sim.model.loading import CheckpointLoad
from sim.model.migration import Migration
from sim.model.peer import PeerLoad
from sim.model.per_model import PerModel
from sim.model.room_index import RoomIndex
from sim.model.sleepers import Sleepers
from sim.model.startup import Startup
from sim.queues import get_queue
from sim.spec import ClusterConfig
from thaw_kernel.errors import InputError
from thaw_kernel.tiers import LOAD_TIERS, Tier


@dataclass
class _Held:
    """An instance waiting for migrations to free its GPUs."""

    left: int  # migrations still to leave
    start: Callable[[], None]  # begins its start-up once they have
    pledged: int  # GPUs the leaving instances pass to it


class Simulation:
    def __init__(
        self,
        config: ClusterConfig,
        trace: pd.DataFrame,
        policy: str,
        rng: np.random.Generator,
        progress: Callable[[int, int], None] | None = None,
        check: bool = False,
    ) -> None:
        self.config = config
        self.clock = Clock()
        self.cluster = Cluster(config, self.clock)
        self.policy = get_policy(policy)(rng)
        self.table = RequestTable(trace, list(config.models))
        self._model_names = list(config.models)
        self._progress = progress
        self._ids = itertools.count()
        self._held: dict[Instance, _Held] = {}  # instances waiting for migrations
        self._migration_of: dict[Instance, Migration] = {}  # by source
        self._pledged: dict[Instance, int] = {}  # GPUs a migrating source passes on
        self._rooms = PerModel(
            lambda name: RoomIndex(
                config.models[name].max_batch, lambda: self.queue.room_opened(name)
            )
        )
        self.queue = get_queue(config.queue)(
            self._route,
            self.cluster,
            config.models,
            self.table.arrival,
            self.policy.needs,
            self.table.turned_away,
        )
        self.cluster.cached_changed = self.queue.cached_changed
        self.keep_alive = make_keep_alive(config.keep_alive, config.keep_alive_s)
        self.keep_alive.start(self.table.arrival, self.table.model, self._model_names)
        self.cluster.victim = self.keep_alive.victim
        self.cluster.reclaim_order = self.keep_alive.reclaim_order
        # Sleeping engines (`sim.model.sleepers`), when the keep-alive lets instances sleep.
        self.sleepers: Sleepers | None = None
        if self.keep_alive.sleep_s:
            self.sleepers = Sleepers(config, self.cluster, self.clock, self.keep_alive.sleep_s)
            self.cluster.wake_offers = self.sleepers.offers
        # The `keep_alive` of an idle instance kept until its GPUs are needed: never fires.
        self._until_needed = Timer(self.clock, self._expire, ())
        self._prewarm_at: dict[str, Timer] = {}  # pending pre-warm per model
        self.prewarms = 0
        self.prewarm_hits = 0  # pre-warmed instances that served a request
        peer = self.cluster.peer
        self.loads_by_tier = dict.fromkeys((t for t in LOAD_TIERS if t != Tier.PEER or peer), 0)
        if peer is not None:
            peer.released = self._released
        self.migrations = 0
        self.migrations_moved = 0  # the others ended with the source empty: nothing to move
        self.preemptions = 0
        self.wall_s = 0.0
        self.stopped_at: float | None = None  # a time limit cut the run short
        if check:
            self._audit_every_event()

    # --- arrivals and routing ---

    def run(self, until: float | None = None) -> None:
        """Simulate to the end, or to simulated time `until` if the end comes later:
        requests unfinished then end as `timeout`. Python's cyclic garbage collector is
        paused meanwhile: the event loop makes no reference cycles (its garbage is freed
        by reference counting), and each full collection would walk every live object,
        so its cost grew with the cluster (on 1,024 servers it halved the speed)."""
        started = time.perf_counter()
        if self.table.n:
            self.clock.call_next(self.table.arrival_cells[0], self._arrive, 0)
        self._start_floors()
        paused = gc.isenabled()
        gc.disable()
        try:
            self.clock.run(until)
        finally:
            if paused:
                gc.enable()
        if until is None:  # nothing left to do: none is needed
            self._stop_kept_until_needed()
        self.wall_s = time.perf_counter() - started
        if until is not None and self._unfinished():
            self.stopped_at = until
            self.table.time_out_pending()
            self.cluster.charge_running({i: h.pledged for i, h in self._held.items()})
            if self.sleepers is not None:
                self.sleepers.cut_short()
        check_outcome(self)

    def _stop_kept_until_needed(self) -> None:
        """Stop the instances a keep-alive policy kept warm with no time limit."""
        for server in self.cluster.servers:
            for instance in [i for i in server.idle if i.keep_alive is self._until_needed]:
                instance.keep_alive = None
                self.cluster.stop(instance, "expired")

    def _unfinished(self) -> bool:
        """Whether a request or an instance is still alive (the run was cut short)."""
        pending = (self.table.status == 0).any()
        return bool(pending) or any(server.instances for server in self.cluster.servers)

    def _audit_every_event(self) -> None:
        """Check the books after every event; a violation names the event."""
        last = [0.0]
        cpu_seen: dict[int, dict] = {}

        def audit(event: Callable[..., object]) -> None:
            try:
                check_state(self, last[0], cpu_seen)
            except InvariantError as err:
                raise InvariantError(f"after {event.__qualname__}: {err}") from None
            last[0] = self.clock.now

        self.clock.after_event = audit

    @property
    def held(self) -> Collection[Instance]:
        """Instances whose start waits for migrations to free their GPUs."""
        return self._held.keys()

    @property
    def pledged(self) -> Mapping[Instance, int]:
        """GPUs that migrating sources pass on to the instances they make room for."""
        return self._pledged

    def _arrive(self, i: int) -> None:
        nxt = i + 1
        if nxt < self.table.n:
            # Never negative: `now` may exceed an equal arrival time by a rounding error.
            delay = max(0.0, self.table.arrival_cells[nxt] - self.clock.now)
            self.clock.call_next(delay, self._arrive, nxt)
        if self._progress is not None and (nxt % 1024 == 0 or nxt == self.table.n):
            self._progress(nxt, self.table.n)
        self.queue.arrive(i, self._model_names[self.table.model_cells[i]])

    def _route(self, i: int, model: str) -> bool:
        """Join an instance with room or start one; False if the request must wait."""
        instance = self._rooms[model].best()
        if instance is not None:
            self._join(i, instance, "warm" if instance.state == WARM else instance.tier)
            return True
        if self.sleepers is not None and not self.policy.weighs_wakes:
            # Wake a sleeping engine of the model if one can (a policy that weighs wakes
            # is offered them instead).
            woken = self.sleepers.wake_for(model, self.queue.view(i).can_start)
            if woken is not None:
                self._demand(model)
                self._join(i, woken[0], woken[0].tier, woken[1])
                return True
        t = self.table
        request = Request(
            i,
            model,
            float(t.arrival[i]),
            int(t.input_tokens[i]),
            int(t.output_tokens[i]),
            bool(t.preemptions[i]),
        )
        decision = self.policy.place(request, self.queue.view(i))
        if isinstance(decision, Wake):
            instance = self._woken(model, decision)
            self._demand(model)
            self._join(i, instance, instance.tier, decision.estimate_s)
            return True
        if not isinstance(decision, Start):
            return False
        if decision.preempt and request.preempted:
            raise RuntimeError(f"policy {self.policy.name}: a preempted request preempted")
        for victim in decision.preempt:
            self._preempt(self._movable(decision.server, victim))
        leaving = [self._movable(decision.server, move.instance) for move in decision.migrate]
        instance = self._launch(model, decision.server, leaving, pipelined=True)
        for move, source in zip(decision.migrate, leaving, strict=True):
            self._migrate(source, move.destination, instance)
        self._demand(model)
        self._join(i, instance, instance.tier, decision.estimate_s)
        return True

    def _woken(self, model: str, decision: Wake) -> Instance:
        """Carry out a policy's `Wake` of an engine of `model` its view offered."""
        sleepers, server = self.sleepers, decision.server
        engine = None if sleepers is None else sleepers.engine(model, server, decision.instance)
        if sleepers is None or engine is None or not self.cluster.can_start(server, model):
            raise RuntimeError(
                f"policy {self.policy.name}: instance {decision.instance} on server "
                f"{server} is not a sleeping {model} engine that can wake now"
            )
        sleepers.wake(engine)
        return engine

    def _movable(self, server: int, instance_id: int) -> Instance:
        instance = self.cluster.instance(server, instance_id)
        if instance is None or not instance.movable:
            raise RuntimeError(
                f"policy {self.policy.name}: instance {instance_id} on server {server} "
                "is not a busy warm instance that can be moved"
            )
        return instance

    def _wake(self, instance: Instance) -> bool:
        """Take an idle instance off the idle list (a request or a chain needs it)."""
        if instance.keep_alive is None:  # busy, or idle just now and not yet counting down
            return False
        self.cluster.mark_busy(instance)
        instance.keep_alive.cancel()
        instance.keep_alive = None
        return True

    def _join(self, i: int, instance: Instance, tier: str, estimate_s: float = np.nan) -> None:
        if self._wake(instance):
            self._demand(instance.model.name)
        if instance.prewarmed:
            instance.prewarmed = False
            self.prewarm_hits += 1
        self.table.placed(i, self.clock.now, instance.server, instance.id, tier, estimate_s)
        instance.admit(i, self.table.input_cells[i], self.table.output_cells[i])

    # --- cold starts ---

    def _launch(
        self,
        model: str,
        server: int,
        leaving: list[Instance] | None = None,
        on_ready: Callable[[], None] | None = None,
        peer: bool = True,
        pipelined: bool = False,
    ) -> Instance:
        """Start an instance: its start-up steps (`sim.model.startup`; by default a fixed cost,
        then the checkpoint load), then warm.

        With `leaving` (instances migrating away to free its GPUs), the start waits until
        they have all left. Without `peer`, the load is from the tiers, never a peer's GPUs.
        `pipelined`: a request starts it, whose prefill runs behind the load, from a tier or
        down a chain, if the model's engine executes while loading (`sim.model.overlap`).
        """
        spec = self.config.models[model]
        host, tier = self.cluster.servers[server], self.cluster.peer if peer else None
        load = (tier and tier.load(host, spec)) or CheckpointLoad(
            host, spec, spec.gpus, self.config.copies(model)
        )
        if pipelined and self.config.pipelined(model):
            load.progress = []
        rooms = self._rooms[model]
        instance = Instance(next(self._ids), self.clock, self, rooms, spec, server, load.tier)
        if isinstance(load, PeerLoad):
            load.receiver = instance
            self._wake(load.chain.members[0])  # a new chain's source may be idle
        pledged = self.cluster.place(instance, leaving)
        self._pledged.update(zip(leaving or (), pledged, strict=True))
        own = spec.gpus - sum(pledged)  # the GPUs it holds while it waits for `leaving`
        rooms.update(instance)
        self.loads_by_tier[load.tier] += 1

        def ready() -> None:
            instance.load_s, instance.download_s = load.durations()
            instance.runtime_s = startup.runtime_s
            instance.ready(load.progress, load.offset)
            if on_ready is not None:
                on_ready()

        startup = Startup(self.clock, load.server, load, self.cluster.steps(model), ready)

        def start() -> None:
            # Pledged GPUs were charged to the leaving instances until they left.
            held_s = own * (self.clock.now - instance.allocated_at)
            self.cluster.gpu_seconds += held_s
            self.cluster.starting_gpu_seconds += held_s
            instance.allocated_at = self.clock.now
            startup.begin()

        if leaving:
            self._held[instance] = _Held(len(leaving), start, sum(pledged))
        else:
            start()
        return instance

    # --- freeing GPUs: migration and preemption ---

    def _migrate(self, source: Instance, destination: int, waiting: Instance) -> None:
        """Move `source` to a new instance on `destination`; its GPUs go to `waiting`."""
        model = source.model.name
        cost = self.cluster.round_cost(model, source.server, destination)
        # The target cannot be ready before `migration` below exists (its start is a timer).
        # It never loads from a peer: the likeliest peer, `source`, is about to leave.
        target = self._launch(
            model, destination, on_ready=lambda: migration.target_ready(), peer=False
        )
        bytes_per_token = self.config.migration.bytes_per_token
        migration = Migration(self.clock, self, source, target, cost, bytes_per_token, waiting)
        self._migration_of[source] = migration
        self.migrations += 1

    def source_left(self, migration: Migration) -> None:
        source = migration.source
        del self._migration_of[source]
        self.cluster.retire(source, "migrated", self._pledged.pop(source))
        held = self._held[migration.waiting]
        held.left -= 1
        if held.left == 0:
            del self._held[migration.waiting]
            held.start()

    def migration_done(self, migration: Migration, moved: list[Handover], pause_s: float) -> None:
        self.migrations_moved += bool(moved)
        for h in moved:
            self.table.migrated(
                h.request, pause_s, migration.rounds, migration.bytes_sent(h), h.generated
            )
            if h.remaining is None:
                self.table.moved_before_prefill(h.request, migration.source.ready_at)
        self.queue.drain()

    def _preempt(self, victim: Instance) -> None:
        """Stop `victim` now; its requests go back to the queue, their progress lost."""
        moved = victim.detach()
        self.cluster.retire(victim, "preempted")
        self.preemptions += 1
        for h in moved:
            self.table.preempted(h.request, h.generated)
            self.queue.requeue(h.request, victim.model.name)
        self.clock.call_in(0.0, self.queue.drain)

    # --- what instances report ---

    def first_token(self, instance: Instance, request: int) -> None:
        ready_at = instance.ready_at
        if instance.pipelined is not None and instance.pipelined[0] == request:
            ready_at = instance.pipelined[1]  # the load hid part of its prefill
        self.table.first_token(request, self.clock.now, ready_at)

    def request_done(self, instance: Instance, request: int, generated: float) -> None:
        self.table.done(request, self.clock.now, generated)
        self.queue.drain()

    def became_idle(self, instance: Instance) -> None:
        if instance.sending:  # a multicast chain's member: idle once it ends (`_released`)
            return
        if instance.migrating:
            self._migration_of[instance].source_emptied()
            return
        self.cluster.mark_idle(instance)
        now = self.clock.now
        decision = self.keep_alive.idle(instance, now)
        if instance.model.min_instances and self._at_floor(instance):
            decision = Idle(None, decision.prewarm_in_s)  # the floor: kept until needed
        if decision.keep_s is None:
            instance.keep_alive = self._until_needed
        else:
            instance.keep_alive = self.clock.call_in(decision.keep_s, self._expire, instance)
        if decision.prewarm_in_s is not None:
            model = instance.model.name
            pending = self._prewarm_at.pop(model, None)
            if pending is not None:
                pending.cancel()
            self._prewarm_at[model] = self.clock.call_in(
                decision.prewarm_in_s, self._prewarm, model
            )
        self.queue.drain()

    def _released(self, instance: Instance) -> None:
        """A multicast chain ended: a member that went idle meanwhile is idle now."""
        if not instance.sending and instance.is_idle and instance.keep_alive is None:
            self.became_idle(instance)

    def _at_floor(self, instance: Instance) -> bool:
        """Whether `instance` is one of its model's last `min_instances`."""
        floor = instance.model.min_instances
        return floor > 0 and self.cluster.live[instance.model.name] <= floor

    def _expire(self, instance: Instance) -> None:
        if self._at_floor(instance):
            instance.keep_alive = self._until_needed  # the floor: kept until needed
            return
        instance.keep_alive = None
        if self.sleepers is None or not self.sleepers.try_sleep(instance):
            self.cluster.stop(instance, "expired")

    # --- pre-warming ---

    def _start_floors(self) -> None:
        """Start each model's `min_instances` as the run begins, where the placement
        policy would start them (pre-warms: no request waits for them)."""
        for name, spec in self.config.models.items():
            for _ in range(spec.min_instances - self.cluster.live[name]):
                if not self._launch_prewarm(name, self._placed_prewarm(name)):
                    raise InputError(
                        f"models.{name}.min_instances: {spec.min_instances} instances do not "
                        "fit the cluster's free GPUs"
                    )

    def _demand(self, model: str) -> None:
        """A request of `model` woke an idle instance or started one: a pending pre-warm
        is moot."""
        self.keep_alive.demand(model, self.clock.now)
        pending = self._prewarm_at.pop(model, None)
        if pending is not None:
            pending.cancel()

    def _prewarm(self, model: str) -> None:
        """Start an instance of `model` for the request the policy expects, where the
        placement policy would start one (or wake the engine it would wake); not if the
        model has an instance already, nor if a start there would displace a running
        instance."""
        del self._prewarm_at[model]
        if self.cluster.live[model]:
            return
        decision = self._placed_prewarm(model)
        if isinstance(decision, Wake):
            instance = self._woken(model, decision)
            instance.prewarmed = True
            self.prewarms += 1
            return
        self._launch_prewarm(model, decision)

    def _placed_prewarm(self, model: str) -> Decision:
        """Where the placement policy would start (or wake) an instance of `model` now,
        for a request that no trace request stands behind."""
        return self.policy.place(Request(-1, model, self.clock.now, 1, 1), self.queue.view(-1))

    def _launch_prewarm(self, model: str, decision: Decision) -> bool:
        """Start a pre-warm of `model` where `decision` starts one; not (False) where it
        waits, or would displace a running instance."""
        if not isinstance(decision, Start) or decision.migrate or decision.preempt:
            return False
        instance = self._launch(model, decision.server)
        instance.prewarmed = instance.prewarm = True
        self.prewarms += 1
        return True
