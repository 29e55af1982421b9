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

A load need not begin at the first layer. A receiver that joins a multicast chain
(`sim.model.peer.chain`) mid-stream at offset o (the fraction of the weights, in forward
order, streamed past the start when it joined) receives the weights from o to the end,
then from the start to o. Position x then arrives when f reaches x - o (x >= o) or
1 - o + x (x < o), and the same bound over every position gives

    max( end + min(P/L + P·(1 - o), P),
         max over u of u + P·(w - f(u)) + (P if f(u) > w else 0),  u_w + P )

for 0 < o < 1, with w = 1 - o and u_w the time f reaches w, when the first layer arrives:
the layer just before o, the last to arrive, is computed only once it has, then every
layer after it (where o falls within the first layer, that is all of them: the first token
comes as without the pipeline). Where o falls inside a layer, the layer it splits is whole
only at the end, so the exact first term is end + P·(L - ceil(o·L) + 1)/L; the smooth one
is later by less than P/L, and at a layer's boundary the same. (At o = 0 the load is in
order and the rule above applies; as o approaches 1 this one approaches it.)
"""

from itertools import pairwise


def first_token_at(
    progress: list[tuple[float, float]], prefill_s: float, layers: int, offset: float = 0.0
) -> float:
    """When a prefill of `prefill_s` seconds pipelined behind a load ends, given the load's
    (time, fraction loaded) at its start, at each change of its rate, and at its end;
    `offset`: where in the weights the load began (0: at the first layer)."""
    end = progress[-1][0]
    if offset == 0.0:
        gated = max(u + prefill_s * (1.0 - f) for u, f in progress)
        return max(end + prefill_s / layers, gated)
    wrap = 1.0 - offset
    gated = max(u + prefill_s * (wrap - f) + (prefill_s if f > wrap else 0.0) for u, f in progress)
    first_layer_at = _reaches(progress, wrap)
    # The layer before o computes once it is all in; one that o splits (the first: o < 1/L)
    # leaves the whole prefill to after the load, as without the pipeline.
    last = end + min(prefill_s / layers + prefill_s * wrap, prefill_s)
    return max(last, gated, first_layer_at + prefill_s)


def _reaches(progress: list[tuple[float, float]], fraction: float) -> float:
    """When the piecewise-linear progress first reaches `fraction`."""
    for (u0, f0), (u1, f1) in pairwise(progress):
        if f1 >= fraction:
            return u0 if f1 == f0 else u0 + (u1 - u0) * (fraction - f0) / (f1 - f0)
    return progress[-1][0]


def hidden_s(prefill_s: float, layers: int, offset: float = 0.0) -> float:
    """The most of a prefill a load can hide: all but the last layer's compute; for a
    load that begins at `offset` of the weights, the compute of the layers before it but
    the one just before (none where `offset` falls within the first layer; smooth in the
    offset, as `first_token_at` is)."""
    if offset == 0.0:
        return prefill_s - prefill_s / layers
    return max(prefill_s * offset - prefill_s / layers, 0.0)
