"""Execute-while-load (PipeSwitch, OSDI '20; λScale's λPipe): the first prefill runs layer
by layer behind the checkpoint load instead of after it.

The fluid rule. Let f(u) be the fraction of the checkpoint loaded at time u (piecewise
linear: the load's rate changes whenever link sharing re-times it), P the prefill's
compute and L the model's layers, each 1/L of the weights and of the compute. The
prefill's progress g may never pass the load's (a layer computes as its weights arrive),
so, started at the load's start s, g reaches 1 no earlier than u + P·(1 - f(u)) for every
u: the compute still to do once the weights loaded by u are done. The output also needs
the last layer, and its compute, P/L, cannot begin before the load ends. Hence the first
token at

    max( end + P/L,  max over u of u + P·(1 - f(u)) ).

Between two rate changes u + P·(1 - f(u)) is linear in u, so the maximum is at a change
point (the start, each re-timing, the end): a solo load gives max(end + P/L, s + P).
Treating the weights as streaming in fluidly neglects the first layer's own load time
(at most the load's duration / L).
"""


def first_token_at(progress: list[tuple[float, float]], prefill_s: float, layers: int) -> float:
    """When a prefill of `prefill_s` seconds pipelined behind a load ends, given the load's
    (time, fraction loaded) at its start, at each change of its rate, and at its end."""
    end = progress[-1][0]
    gated = max(u + prefill_s * (1.0 - f) for u, f in progress)
    return max(end + prefill_s / layers, gated)


def hidden_s(prefill_s: float, layers: int) -> float:
    """The most of a prefill a load can hide: all but the last layer's compute."""
    return prefill_s - prefill_s / layers
