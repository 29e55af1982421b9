"""The cluster as a request behind a reservation sees it.

A reservation holds `gpus` GPUs of one server for the queue's head. Every other request's
policy reads the cluster through this view: the reserved server's available GPUs less
those reserved (so it is no candidate unless it has GPUs beyond them), none of its
running instances to migrate or preempt, and its sleeping engines only if a wake leaves
the reservation whole. The estimator and every policy thus price and choose only options
that leave the reservation whole.
"""

import heapq
from collections.abc import Iterator
from typing import TYPE_CHECKING

from policies.base import RoundCost, Running, Sleeping
from thaw_kernel.stages import Step

if TYPE_CHECKING:
    from sim.model.cluster import Cluster
    from sim.model.indexed_set import IndexedSet


class ReservedView:
    def __init__(self, cluster: "Cluster", server: int, gpus: int) -> None:
        self._cluster = cluster
        self.server = server
        self.gpus = gpus

    def _hidden(self) -> int:
        """Available GPUs of the reserved server that the reservation hides."""
        return min(self.gpus, self._cluster.available_gpus(self.server))

    @property
    def now(self) -> float:
        return self._cluster.now

    def steps(self, model: str) -> tuple[Step, ...]:
        return self._cluster.steps(model)

    def gpus_needed(self, model: str) -> int:
        return self._cluster.gpus_needed(model)

    def hidden_prefill_s(self, model: str, tokens: int, offset: float = 0.0) -> float:
        return self._cluster.hidden_prefill_s(model, tokens, offset)

    def load_offset(self, server: int, model: str, delay: float) -> float:
        return self._cluster.load_offset(server, model, delay)

    def available_gpus(self, server: int) -> int:
        available = self._cluster.available_gpus(server)
        return available - self._hidden() if server == self.server else available

    def gpus_in_use(self, server: int) -> int:
        in_use = self._cluster.gpus_in_use(server)
        return in_use + self._hidden() if server == self.server else in_use

    def total_available_gpus(self) -> int:
        return self._cluster.total_available_gpus() - self._hidden()

    def can_host(self, server: int, model: str) -> bool:
        return self._cluster.can_host(server, model)

    def can_start(self, server: int, model: str) -> bool:
        if server != self.server:
            return self._cluster.can_start(server, model)
        return self.can_host(server, model) and (
            self.available_gpus(server) >= self.gpus_needed(model)
        )

    def _excluded(self, model: str) -> bool:
        """Whether the reservation takes the reserved server out of `model`'s candidates."""
        return self._cluster.can_start(self.server, model) and not self.can_start(
            self.server, model
        )

    def candidates(self, model: str) -> Iterator[int]:
        excluded = self._excluded(model)
        for s in self._cluster.candidates(model):
            if not (excluded and s == self.server):
                yield s

    def candidate_count(self, model: str) -> int:
        return self._cluster.candidate_count(model) - self._excluded(model)

    def candidate(self, model: str, k: int) -> int:
        for j, s in enumerate(self.candidates(model)):
            if j == k:
                return s
        raise IndexError(f"no candidate {k} for {model}")

    def least_occupied_candidate(self, model: str) -> int | None:
        # The reservation only makes its server look busier: another best stays best.
        best = self._cluster.least_occupied_candidate(model)
        if best != self.server:
            return best
        return next(self.by_occupancy(model), None)

    def by_occupancy(self, model: str) -> Iterator[int]:
        # The reserved server looks busier by the GPUs it hides: it moves back in the
        # order, or out of it; every other server keeps its place.
        others = (s for s in self._cluster.by_occupancy(model) if s != self.server)
        reserved = [self.server] if self.can_start(self.server, model) else []
        return heapq.merge(others, reserved, key=lambda s: (self.gpus_in_use(s), s))

    def holders(self, model: str, tier: str) -> "IndexedSet":
        return self._cluster.holders(model, tier)

    def load_s(self, server: int, model: str, delay: float) -> float:
        return self._cluster.load_s(server, model, delay)

    def cpu_s(self, server: int, cpu_seconds: tuple[float, ...], delay: float) -> float:
        return self._cluster.cpu_s(server, cpu_seconds, delay)

    def copy_s(self, server: int, model: str) -> float:
        return self._cluster.copy_s(server, model)

    def running(self, server: int) -> list[Running]:
        return [] if server == self.server else self._cluster.running(server)

    def sleeping(self, model: str) -> list[Sleeping]:
        return self._cluster.wake_offers(model, self.can_start)

    def round_cost(self, model: str, source: int, destination: int) -> RoundCost:
        return self._cluster.round_cost(model, source, destination)
