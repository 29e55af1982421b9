"""Startup-time estimates, as the ServerlessLLM scheduler (OSDI '24) makes them.

The startup time of an option is the time from the decision until the new instance is
ready to prefill:
- a start on a server with room: the model's start-up steps one after another
  (`thaw_kernel.stages`; by default the fixed start-up cost, then the checkpoint load),
  a step lasting as long as its longest stage: the load from the fastest tier holding
  it there, sharing the server's links with the loads in flight (`ClusterView.load_s`
  replays the fluid model forward: that is the queue wait), CPU-bound stages sharing
  the server's host cores with the other start-ups' (`ClusterView.cpu_s`, the same
  replay), fixed stages their seconds, an engine's copy of its weights onto its GPUs
  their bytes over its own PCIe lanes (`ClusterView.copy_s`);
- a start that needs migrations first: each displaced instance's destination starts and
  loads its model, then the migration rounds run; the new instance starts once the last
  displaced instance has stopped.

With execute-while-load (`sim.model.overlap`) the prefill of the request that starts the
instance runs behind the load, which then delays its first token only by what it outlasts
of the prefill's hidden part (`ClusterView.hidden_prefill_s`): the estimate is the
effective startup, the first token's time less the whole prefill. A load that would join
a multicast chain mid-stream (`ClusterView.load_offset`) gets its first layers last: it
hides only the layers it receives after them, and none of the wait for the first layer,
the part 1 - o of a load of constant rate.

The estimates assume nothing else happens meanwhile: no other load or CPU stage begins,
each migrating instance keeps its decode batch, and (priced step by step) an earlier
step's flows do not delay the others' flows that a later step meets. When that holds
they are exact (tests check it); otherwise the recorded estimate and the actual startup
tell the error.
"""

from dataclasses import dataclass

from policies.base import ClusterView, Move, RoundCost, Running
from thaw_kernel.stages import COPY, CPU, FIXED, LOAD, Step


def start_s(
    view: ClusterView, server: int, model: str, delay: float = 0.0, tokens: int | None = None
) -> float:
    """Seconds until an instance of `model` whose start begins in `delay` s is ready; with
    the `tokens` of the prompt whose prefill runs behind the load (the last step) if the
    model's engine executes while loading, the effective startup."""
    steps = view.steps(model)
    t = delay
    for step in steps[:-1]:
        t += step_s(view, server, model, step, t)
    last = step_s(view, server, model, steps[-1], t)
    hidden = 0.0 if tokens is None else view.hidden_prefill_s(model, tokens)
    if not hidden:
        return t + last
    offset = view.load_offset(server, model, t)
    if offset == 0.0:
        return t + max(last - hidden, 0.0)
    # The first layer comes the part 1 - offset into the load: nothing hides that wait.
    hidden = view.hidden_prefill_s(model, tokens, offset)
    return t + max(last - hidden, last * (1.0 - offset))


def step_s(view: ClusterView, server: int, model: str, step: Step, delay: float) -> float:
    """Seconds a start-up step beginning `delay` seconds from now would take."""
    longest = max((s.amount for s in step if s.kind == FIXED), default=0.0)
    if any(s.kind == LOAD for s in step):
        longest = max(longest, view.load_s(server, model, delay))
    if any(s.kind == COPY for s in step):
        longest = max(longest, view.copy_s(server, model))
    work = tuple(s.amount for s in step if s.kind == CPU)
    if work:
        longest = max(longest, view.cpu_s(server, work, delay))
    return longest


@dataclass(frozen=True)
class RoundsPlan:
    rounds: int
    rounds_s: float  # from the target being ready until the source stops
    pause_s: float  # the final stop-and-copy the migrated requests see


def plan_rounds(tokens: float, tokens_per_s: float, cost: RoundCost) -> RoundsPlan:
    """Rounds of a migration starting with `tokens` to send, while the source generates
    `tokens_per_s` (its decode batch over its step time)."""
    rounds, elapsed = 0, 0.0
    while True:
        rounds += 1
        duration = cost.round_s(tokens)
        elapsed += duration
        tokens = duration * tokens_per_s
        if tokens < cost.stop_tokens or rounds >= cost.max_rounds:
            return RoundsPlan(rounds, elapsed, cost.round_s(tokens))


def leaves_at_s(view: ClusterView, source: int, instance: Running, destination: int) -> float:
    """Seconds until a migrating instance stops on `source`, its GPUs free."""
    ready = start_s(view, destination, instance.model)
    rate = instance.decoding / instance.step_s if instance.decoding else 0.0
    cost = view.round_cost(instance.model, source, destination)
    return ready + plan_rounds(instance.tokens + rate * ready, rate, cost).rounds_s


def migration_start_s(
    view: ClusterView,
    server: int,
    model: str,
    leaving: tuple[Running, ...],
    moves: tuple[Move, ...],
    tokens: int | None = None,
) -> float:
    """Startup of `model` on `server` once the instances `leaving` have migrated away."""
    free_at = max(
        leaves_at_s(view, server, r, m.destination) for r, m in zip(leaving, moves, strict=True)
    )
    return start_s(view, server, model, free_at, tokens)
