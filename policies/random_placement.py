"""`random`: any server that can start the model now, uniformly at random (seeded).

The baseline that ignores where checkpoints are: what a locality-blind serverless
platform does.

A trace request's draw depends only on the seed and the request's index (common random
numbers). A change that turns one request's warm hit into a cold start, or back, then
changes no other request's draw, where a single stream of draws would be shifted by one
for every start after it (later requests may still see other candidates: the servers
that are free depend on what came before). So two configurations compared under `random`
differ by the configuration, not by a realigned stream, and a real replay under the same
seed (`calibration.validate`) draws for each request the number its simulation draws. A
prewarm, which no trace request stands behind, draws from the policy's stream.
"""

import numpy as np

from policies.base import ClusterView, Decision, Needs, Policy, Request, Start, Wait, register


@register("random")
class RandomPlacement(Policy):
    needs = Needs.CANDIDATE  # and it draws only when it starts

    def __init__(self, rng: np.random.Generator) -> None:
        super().__init__(rng)
        self._key = int(rng.integers(2**63))

    def place(self, request: Request, view: ClusterView) -> Decision:
        count = view.candidate_count(request.model)
        if count == 0:
            return Wait()
        return Start(view.candidate(request.model, self._draw(request, count)))

    def _draw(self, request: Request, count: int) -> int:
        """One of `count` candidates, uniformly: keyed by the request's index, or from the
        policy's stream for a request the platform made up (a prewarm, index -1)."""
        if request.index < 0:
            return int(self.rng.integers(count))
        word = np.random.SeedSequence((self._key, request.index)).generate_state(1, np.uint64)
        return (int(word[0]) * count) >> 64
