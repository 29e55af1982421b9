"""Live migration by token recomputation, as ServerlessLLM does it, between two processes.

A request decoding on a source replica moves to a destination replica without sending
its KV cache: the destination receives token ids and recomputes the cache by prefill,
which is far cheaper to send and, for a GPU, fast to compute. The source keeps decoding
meanwhile, so the request sees only the last, short step:

1. The destination starts in its own process and loads the model from the checkpoint
   (`Destination`; this load is the loader's cost, measured on its own).
2. Rounds: the source sends the tokens so far (prompt and generated, the whole list);
   the destination prefills the ones it does not have yet onto its cache and answers;
   the source decodes all the while. Rounds repeat until fewer than `threshold` tokens
   were generated during one, or `max_rounds` is reached.
3. The source stops and sends the tokens once more; the destination prefills the last
   ones, its argmax is the request's next token (the end of the pause), and it decodes
   on to the end.

Both sides decode greedily, so the destination continues with exactly the tokens the
source would have produced. Messages are pickled by hand and sent as bytes, so the
record holds the exact bytes each round put on the pipe. The pause is timed on the
source's clock, from its stop to the destination's first-token message: it includes one
message's latency, as a real request's would. The same code runs with the two replicas
on two GPUs (`device=`), or both on one. The destination's side of a request
(`Recomputation`) and the rule that ends the rounds (`last_round`) also serve the
validation replay's instances (`calibration.validate`), which migrate whole batches.
"""

import contextlib
import multiprocessing
import pickle
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import torch

from calibration.migration.model import ModelConfig, Transformer, load_model

DEFAULT_THRESHOLD = 20
DEFAULT_MAX_ROUNDS = 8
STARTUP_TIMEOUT_S = 300.0


def last_round(generated: float, rounds: int, threshold: float, max_rounds: int) -> bool:
    """Whether the source stops after `rounds` rounds, the last of which saw `generated`
    new tokens: few enough that the pause is short, or the cap reached."""
    return generated < threshold or rounds >= max_rounds


class Recomputation:
    """The destination's copy of one request: the tokens it holds, their KV cache
    recomputed by prefill, and the logits after them (whose argmax is the next token)."""

    def __init__(self, model: Transformer) -> None:
        self.model = model
        self.cache = model.new_cache()
        self.known: list[int] = []
        self.logits: torch.Tensor | None = None

    def extend(self, tokens: Sequence[int]) -> int:
        """Take the request's whole token list so far; prefill the ones not held yet.
        Returns how many that was (a source that waited sends nothing new)."""
        tokens = list(tokens)
        if tokens[: len(self.known)] != self.known:
            raise ValueError("the tokens sent do not extend the ones recomputed before")
        recomputed = len(tokens) - len(self.known)
        if recomputed:
            self.logits = self.model.prefill(tokens[len(self.known) :], self.cache)
        self.known = tokens
        return recomputed

    def next_token(self) -> int:
        assert self.logits is not None, "nothing recomputed yet"
        return int(self.logits.argmax())

    def reset(self) -> None:
        """Empty, for the next request (the cache's memory is kept)."""
        self.cache.length, self.known, self.logits = 0, [], None


@dataclass(frozen=True)
class Round:
    """One message of token ids and the destination's recomputation of it."""

    tokens_sent: int  # length of the token list sent (the whole sequence so far)
    bytes_sent: int  # bytes the message put on the pipe
    recomputed: int  # tokens the destination prefilled (the ones it did not have)
    recompute_s: float  # the destination's prefill time (to its argmax, in the final round)
    round_s: float  # the source's clock, from sending to the answer
    generated: int  # tokens the source decoded meanwhile (0 in the final round: it stopped)


@dataclass(frozen=True)
class MigrationRecord:
    rounds: tuple[Round, ...]  # while the source decodes
    final: Round  # after the source stopped; its round_s is the pause
    total_s: float  # from the first round's send to the destination's first token
    source_tokens: tuple[int, ...]  # generated on the source, before the stop
    destination_tokens: tuple[int, ...]  # generated on the destination, after it

    @property
    def pause_s(self) -> float:
        """What the request sees: from the source's stop to the destination's first token."""
        return self.final.round_s

    @property
    def tokens(self) -> tuple[int, ...]:
        return self.source_tokens + self.destination_tokens


class Destination:
    """A replica in a process of its own, loaded from a checkpoint, ready for migrations.

    It serves one migration after another (its cache is emptied after each), so repeated
    measurements pay for the process and the load once. `load_s` is the loader's time
    inside it; `startup_s` adds the process start and the import of torch.
    """

    def __init__(
        self,
        config: ModelConfig,
        checkpoint: Path,
        device: str = "cpu",
        threads: int | None = None,
    ) -> None:
        context = multiprocessing.get_context("spawn")  # fork is unsafe with CUDA and threads
        self.connection, child = context.Pipe()
        started = time.perf_counter()
        self.process = context.Process(
            target=_serve,
            args=(child, config, Path(checkpoint), device, threads),
            name="thaw-migration-destination",
            daemon=True,
        )
        self.process.start()
        child.close()
        try:
            if not self.connection.poll(STARTUP_TIMEOUT_S):
                raise RuntimeError(f"destination not ready after {STARTUP_TIMEOUT_S:.0f} s")
            self.load_s: float = self.receive("ready")
        except BaseException:
            self.close()
            raise
        self.startup_s = time.perf_counter() - started

    def send(self, message: tuple) -> int:
        payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        self.connection.send_bytes(payload)
        return len(payload)

    def receive(self, expected: str) -> Any:
        try:
            kind, body = pickle.loads(self.connection.recv_bytes())
        except EOFError:
            raise RuntimeError("the destination process died") from None
        if kind == "error":
            raise RuntimeError(f"the destination failed:\n{body}")
        if kind != expected:
            raise RuntimeError(f"the destination answered {kind!r}, expected {expected!r}")
        return body

    def stop_and_copy(self, tokens: Sequence[int]) -> float:
        """Seconds from sending `tokens` to the destination's first token after them, on
        an idle destination: the pause of a migration whose final round moves them all.
        Calibration fits the round cost `a * tokens + b` on it; the cache is then emptied.
        """
        started = time.perf_counter()
        self.send(("final", (list(tokens), 1)))
        self.receive("first")
        elapsed = time.perf_counter() - started
        self.receive("done")
        return elapsed

    def close(self) -> None:
        if self.process.is_alive():
            with contextlib.suppress(OSError):  # it may be exiting already
                self.send(("stop", None))
            self.process.join(10)
            if self.process.is_alive():
                self.process.terminate()
                self.process.join()
        self.connection.close()

    def __enter__(self) -> "Destination":
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def migrate(
    model: Transformer,
    prompt: Sequence[int],
    destination: Destination,
    *,
    new_tokens: int,
    start_after: int = 1,
    threshold: int = DEFAULT_THRESHOLD,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
) -> MigrationRecord:
    """Serve `prompt` greedily for `new_tokens` tokens, moving to `destination` on the way.

    This process is the source: it prefills and decodes `start_after` tokens, then runs
    the rounds while decoding, stops, and lets the destination finish. At least the
    last token is left to the destination: a source that reaches it waits for the round.
    """
    if not 1 <= start_after < new_tokens:
        raise ValueError(f"start_after must be in [1, new_tokens), not {start_after}")
    if max_rounds < 1:
        raise ValueError(f"max_rounds must be >= 1, not {max_rounds}")
    source = _Source(model, list(prompt))
    while len(source.generated) < start_after:
        source.step()
    rounds: list[Round] = []
    began = time.perf_counter()
    while True:
        tokens = source.tokens()
        sent, before = time.perf_counter(), len(source.generated)
        size = destination.send(("round", tokens))
        while not destination.connection.poll():
            if len(source.generated) >= new_tokens - 1:
                break
            source.step()
        recomputed, recompute_s = destination.receive("recomputed")
        generated = len(source.generated) - before
        round_s = time.perf_counter() - sent
        rounds.append(Round(len(tokens), size, recomputed, recompute_s, round_s, generated))
        if last_round(generated, len(rounds), threshold, max_rounds):
            break
    tokens = source.tokens()
    stopped = time.perf_counter()
    size = destination.send(("final", (tokens, new_tokens - len(source.generated))))
    recomputed, recompute_s = destination.receive("first")
    first = time.perf_counter()
    final = Round(len(tokens), size, recomputed, recompute_s, first - stopped, 0)
    continued = destination.receive("done")
    return MigrationRecord(
        tuple(rounds), final, first - began, tuple(source.generated), tuple(continued)
    )


class _Source:
    """The request on the source: its cache, the tokens it generated, one decode step."""

    def __init__(self, model: Transformer, prompt: list[int]) -> None:
        self.model, self.prompt, self.cache = model, prompt, model.new_cache()
        self.generated = [int(model.prefill(prompt, self.cache).argmax())]

    def step(self) -> None:
        self.generated.append(int(self.model.decode(self.generated[-1], self.cache).argmax()))

    def tokens(self) -> list[int]:
        return self.prompt + self.generated


def _serve(
    connection: Connection,
    config: ModelConfig,
    checkpoint: Path,
    device: str,
    threads: int | None,
) -> None:
    """The destination process: load, then answer rounds until told to stop."""

    def send(kind: str, body: object) -> None:
        connection.send_bytes(pickle.dumps((kind, body), protocol=pickle.HIGHEST_PROTOCOL))

    try:
        if threads:
            torch.set_num_threads(threads)
        started = time.perf_counter()
        model = load_model(checkpoint, config, device)
        _synchronize(model.device)
        send("ready", time.perf_counter() - started)
        request = Recomputation(model)
        while True:
            kind, body = pickle.loads(connection.recv_bytes())
            if kind == "stop":
                return
            tokens, remaining = body if kind == "final" else (body, 0)
            started = time.perf_counter()
            recomputed = request.extend(tokens)
            if kind == "round":
                _synchronize(model.device)
                send("recomputed", (recomputed, time.perf_counter() - started))
                continue
            generated = [request.next_token()]
            send("first", (recomputed, time.perf_counter() - started))
            while len(generated) < remaining:
                generated.append(int(model.decode(generated[-1], request.cache).argmax()))
            send("done", generated)
            request.reset()
    except Exception:
        send("error", traceback.format_exc())


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
