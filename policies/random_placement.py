"""`random`: any server that can start the model now, uniformly at random (seeded).

The baseline that ignores where checkpoints are: what a locality-blind serverless
platform does.
"""

from policies.base import ClusterView, Decision, Needs, Policy, Request, Start, Wait, register


@register("random")
class RandomPlacement(Policy):
    needs = Needs.CANDIDATE  # and it draws only when it starts

    def place(self, request: Request, view: ClusterView) -> Decision:
        count = view.candidate_count(request.model)
        if count == 0:
            return Wait()
        return Start(view.candidate(request.model, int(self.rng.integers(count))))
