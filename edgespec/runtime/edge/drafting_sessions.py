"""The sessions a batched drafting server (:mod:`edgespec.runtime.edge.drafting_server`) holds
on its verification server: one :class:`Lane` per prompt, named ``<client_id>-<run
tag>-<index>``, opened one by one and closed all at once (:func:`close_all`: a server that
stopped answering costs one close deadline, not one per session nor one per 32 sessions), and
:func:`check_sessions`, which asks the server to accept every prompt with its budget before
any drafting starts."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from edgespec.config import ConfigError
from edgespec.core.types import SamplingParams
from edgespec.runtime.edge.batched_draft import DraftState
from edgespec.runtime.edge.ledger import Ledger
from edgespec.runtime.edge.rounds import Verifier
from edgespec.runtime.errors import RequestError
from edgespec.runtime.messages import SessionSpec

Clock = Callable[[], float]


@runtime_checkable
class ClosesTogether(Protocol):
    """A verifier that closes many sessions at once, waiting one close deadline for them
    all (:meth:`edgespec.runtime.wire.grpc_client.RemoteVerifier.close_together`)."""

    def close_together(self, session_ids: Sequence[str]) -> None: ...


@dataclass(slots=True)
class Lane:
    """One session as the drafting server keeps it."""

    session_id: str
    prompt: tuple[int, ...]
    max_new_tokens: int
    ledger: Ledger
    state: DraftState = field(default_factory=DraftState)
    finished: bool = False

    @property
    def context(self) -> tuple[int, ...]:
        return (*self.prompt, *self.ledger.output)


def make_lanes(
    prompts: Sequence[Sequence[int]], budgets: Sequence[int], client_id: str, clock: Clock
) -> list[Lane]:
    """One lane per prompt, named ``<client_id>-<run tag>-<index>`` (new for every run)."""
    if any(not prompt for prompt in prompts):
        raise ConfigError("prompts", "every prompt needs at least one token")
    tag = uuid.uuid4().hex[:8]
    names = [f"{client_id}-{tag}-{k}" for k in range(len(prompts))]
    return [
        Lane(name, tuple(prompt), budget, Ledger(name, None, None, clock))
        for name, prompt, budget in zip(names, prompts, budgets, strict=True)
    ]


def open_all(verifier: Verifier, lanes: Sequence[Lane], client_id: str) -> None:
    """Open every lane's session (greedy, its budget); a refusal names the prompt, 1-based:
    ``prompt 2 of 8: <the server's reason>``."""
    for k, lane in enumerate(lanes):
        sampling = SamplingParams(temperature=0.0, max_new_tokens=lane.max_new_tokens)
        try:
            verifier.open(SessionSpec(lane.session_id, client_id, lane.prompt, sampling))
        except RequestError as exc:
            raise RequestError(exc.code, f"prompt {k + 1} of {len(lanes)}: {exc.message}") from exc


def close_all(verifier: Verifier, lanes: Sequence[Lane]) -> None:
    """Close every lane's session, all at once when the verifier can (a server's client:
    one close deadline for them all, however many), else one after another (a verifier in
    this process answers at once); a lane never opened, or a server gone, is no error: the
    session is gone or the server expires it."""
    if isinstance(verifier, ClosesTogether):
        verifier.close_together([lane.session_id for lane in lanes])
        return
    for lane in lanes:
        with contextlib.suppress(RequestError):
            verifier.close(lane.session_id)


def check_sessions(
    verifier: Verifier,
    prompts: Sequence[Sequence[int]],
    max_new_tokens: int,
    client_id: str,
    clock: Clock = time.perf_counter,
) -> None:
    """Open, then close, a session for every prompt with ``max_new_tokens``: what the server
    refuses (a prompt plus the budget over the target's context, an id outside its
    vocabulary, more sessions than its quota) is refused now, in the caller's terms, before
    a warm-up or any drafting."""
    lanes = make_lanes(prompts, [max_new_tokens] * len(prompts), client_id, clock)
    try:
        open_all(verifier, lanes, client_id)
    finally:
        close_all(verifier, lanes)
