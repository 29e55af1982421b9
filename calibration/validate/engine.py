"""A replay instance's batch, as the simulator's instance serves one (`sim/model/instance.py`),
and its two sides of a live migration (`sim/model/migration.py`).

Prompts are prefilled one at a time, first come first served, decoding paused meanwhile,
the first token out of the prefill; then one `decode_batch` step at a time over every
decoding request, each row fed its request's last token and given the row's argmax as the
next. The rows share one position counter: the model has no padding mask, so sequences of
different lengths cannot share a batch exactly. A step's compute is that of the real
batch (dominated by reading the weights); the tokens are not each request's own
greedy continuation, which timing does not need.

Migration moves token ids, never the KV cache, with `calibration.migration.token_migration`'s
destination side (`Recomputation`) and stop rule (`last_round`): the source answers each
`snapshot` with every decoding request's tokens so far and keeps decoding; the
destination `recompute`s the ones it lacks by prefill; once a round saw few new tokens
(or the rounds reached their cap) the source stops and hands its requests over, those not
yet prefilled as prompts, and the destination `adopt`s them: it prefills the last tokens,
takes the argmax as each request's next token (the end of the pause) and decodes on.
"""

from collections.abc import Callable
from dataclasses import dataclass

import torch

from calibration.migration.model import KVCache, Transformer
from calibration.migration.token_migration import Recomputation, last_round

Emit = Callable[..., None]  # emit(event, **fields): one message to the scheduler


@dataclass
class Sequence:
    """One request's tokens (prompt, then every output token so far, wherever generated)."""

    request: int
    tokens: list[int]
    output: int  # output tokens it needs in all
    generated: int = 0  # of those, generated so far

    def append(self, token: int) -> None:
        self.tokens.append(token)
        self.generated += 1

    @property
    def finished(self) -> bool:
        return self.generated >= self.output

    def handover(self) -> dict:
        return {
            "request": self.request,
            "tokens": self.tokens,
            "output": self.output,
            "generated": self.generated,
        }


def prompt(request: int, input_tokens: int, vocab: int) -> list[int]:
    """The request's prompt: token ids fixed by its index."""
    return [(request * 7919 + k) % vocab for k in range(input_tokens)]


class Engine:
    """The batch: a FIFO of prompts to prefill and the decoding requests."""

    def __init__(self, model: Transformer, max_batch: int, emit: Emit) -> None:
        self.model = model
        self.emit = emit
        self.prefill: list[Sequence] = []
        self.decoding: dict[int, Sequence] = {}
        self.cache = KVCache.empty(model.config, max_batch, model.device)
        self.position = 0
        self.sent: dict[int, int] = {}  # as a migration's source: tokens sent per request
        self.recomputed: dict[int, Recomputation] = {}  # as its destination

    def busy(self) -> bool:
        return bool(self.prefill or self.decoding)

    def admit(self, request: int, input_tokens: int, output_tokens: int) -> None:
        tokens = prompt(request, input_tokens, self.model.config.vocab)
        self.prefill.append(Sequence(request, tokens, output_tokens))

    def step(self) -> None:
        """A prefill if one is waiting, else one decode step of the batch."""
        if self.prefill:
            sequence = self.prefill.pop(0)
            logits = self.model.prefill(sequence.tokens, self.model.new_cache())
            sequence.append(int(logits.argmax()))
            self.emit("first", request=sequence.request)
            self._continue(sequence)
            return
        batch = list(self.decoding.values())
        if self.position + 1 >= self.model.config.max_positions:
            self.position = 0
        view = KVCache(
            [k[: len(batch)] for k in self.cache.keys],
            [v[: len(batch)] for v in self.cache.values],
            self.position,
        )
        last = torch.tensor([s.tokens[-1] for s in batch], dtype=torch.long)
        following = self.model.decode_batch(last, view).argmax(-1).tolist()  # waits for it
        self.position += 1
        for sequence, token in zip(batch, following, strict=True):
            sequence.append(token)
            if sequence.finished:
                del self.decoding[sequence.request]
                self._done(sequence)

    def _continue(self, sequence: Sequence) -> None:
        if sequence.finished:
            self._done(sequence)
        else:
            self.decoding[sequence.request] = sequence

    def _done(self, sequence: Sequence) -> None:
        self.emit("done", request=sequence.request, generated=sequence.generated)

    # --- a migration's source ---

    def snapshot(self, threshold: float, rounds: int, max_rounds: int) -> None:
        """Send every decoding request's tokens so far; stop and hand everything over if
        the round that ended (the `rounds`-th) saw fewer than `threshold` new tokens, or
        the cap is reached (the first snapshot, at `rounds` 0, never stops)."""
        held = {s.request: len(s.tokens) for s in self.decoding.values()}
        new = sum(n - self.sent.get(r, 0) for r, n in held.items())
        self.sent = held
        stop = rounds > 0 and last_round(new, rounds, threshold, max_rounds)
        fields: dict[str, object] = {
            "requests": [s.handover() for s in self.decoding.values()],
            "new": new,
            "stopped": stop,
        }
        if stop:
            fields["waiting"] = [s.handover() for s in self.prefill]
            self.prefill, self.decoding, self.sent = [], {}, {}
        self.emit("tokens", **fields)

    # --- a migration's destination ---

    def recompute(self, requests: list[dict]) -> None:
        """A round: prefill each request's tokens this instance does not hold yet (a
        request the source finished meanwhile is dropped)."""
        self.recomputed = {
            h["request"]: self.recomputed.get(h["request"]) or Recomputation(self.model)
            for h in requests
        }
        tokens = sum(self.recomputed[h["request"]].extend(h["tokens"]) for h in requests)
        self.emit("recomputed", tokens=tokens)

    def adopt(self, requests: list[dict], waiting: list[dict]) -> None:
        """The final round: recompute the last tokens, then decode on; requests that had
        not been prefilled wait for their prefill here."""
        resumed = []
        for h in requests:
            recomputation = self.recomputed.get(h["request"]) or Recomputation(self.model)
            recomputation.extend(h["tokens"])
            sequence = Sequence(h["request"], list(h["tokens"]), h["output"], h["generated"])
            sequence.append(recomputation.next_token())
            resumed.append(sequence)
        self.recomputed = {}
        self.emit("resumed", requests=[s.request for s in resumed])
        for sequence in resumed:
            self._continue(sequence)
        for h in waiting:
            self.prefill.append(Sequence(h["request"], list(h["tokens"]), h["output"]))
