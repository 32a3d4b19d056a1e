"""Reopening a drafter's session that the verifier lost.

A verifier that lost the session (server restart, idle expiry) or became unreachable is
handled by the drafter's loop (:func:`edgespec.runtime.edge.drafter.generate`) by closing
the abandoned session if the server still has it (:func:`close_quietly`) and reopening it
with every committed token as the new prompt (:func:`reopen`; the output among them
counted as such, for the penalties), so the output is identical to an uninterrupted run
(greedy) — the server keeps no state the client lacks. A sampled
run stays identically distributed: the reopened session's seed (:func:`reopened_seed`)
starts a verification stream of its own, so no uniform the run already used is drawn again.

Every retry (:func:`reopen`, :func:`open_retrying`, routing while no server answers:
:func:`~edgespec.runtime.edge.routing.route_retrying`) is one loop,
:func:`retry_unavailable`: it retries every ``retry_backoff_s`` while the server is
unreachable, for at most ``retry_timeout_s``, and waits between attempts on the
generation's cancel event when it has one: a generation cancelled (its client gone)
while the server is unreachable ends within one ``retry_backoff_s`` with :class:`Cancelled`.
An open retried so (:func:`retry_within`) waits for each answer only as long as is left of
``retry_timeout_s`` (at least :data:`MIN_ATTEMPT_S`), and a verifier that can
(:class:`~edgespec.runtime.edge.bounded_calls.BoundedOpen`: the gRPC client) cuts it short
once the event is set: a server that takes the connection and never answers (stopped,
hung) holds the request no longer than the retries, not another request timeout on top.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import threading
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np

from edgespec.core.wire_limits import SEED_LIMIT
from edgespec.runtime.edge.bounded_calls import open_bounded
from edgespec.runtime.edge.rounds import Verifier
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec

T = TypeVar("T")

RETRY_BACKOFF_S = 0.05
"""How long a retry of an unreachable server waits before the next attempt, by default."""

MIN_ATTEMPT_S = 1.0
"""The least an attempt to open a session waits for its answer, however little is left of its
retry window (and at most the request timeout), and the most a routing round waits for each
server's ``Stats`` (:mod:`~edgespec.runtime.edge.routing`): neither call does model work, so
a server that answers at all answers it within this."""


class Cancelled(Exception):
    """The generation's caller ended it (its client gone, a stop sequence reached): it
    stops here, and the sessions it opened are closed on the way out."""


def _wait_to_retry(retry_backoff_s: float, cancel: threading.Event | None) -> None:
    """Wait ``retry_backoff_s`` before the next attempt; :class:`Cancelled` as soon as
    ``cancel`` is set (at once when it already is). No event: a plain sleep."""
    if cancel is None:
        time.sleep(retry_backoff_s)
    elif cancel.wait(retry_backoff_s):
        raise Cancelled("cancelled while retrying an unreachable server")


def retry_unavailable(
    attempt: Callable[[], T],
    clock: Callable[[], float],
    retry_timeout_s: float,
    retry_backoff_s: float,
    cancel: threading.Event | None = None,
    on_cancel: Callable[[RequestError], None] = lambda exc: None,
    retry_code: ErrorCode = ErrorCode.UNAVAILABLE,
) -> T:
    """``attempt()``'s answer, retried every ``retry_backoff_s`` while it fails
    ``retry_code`` (``UNAVAILABLE``: the server down, restarting) for at most
    ``retry_timeout_s``; then, or at any other error, that error. :class:`Cancelled` within
    a backoff once ``cancel`` is set, after ``on_cancel(the last failure)``."""
    return retry_within(lambda left_s: attempt(), clock, retry_timeout_s, retry_backoff_s,
                        cancel, on_cancel, retry_code)  # fmt: skip


def retry_within(
    attempt: Callable[[float], T],
    clock: Callable[[], float],
    retry_timeout_s: float,
    retry_backoff_s: float,
    cancel: threading.Event | None = None,
    on_cancel: Callable[[RequestError], None] = lambda exc: None,
    retry_code: ErrorCode = ErrorCode.UNAVAILABLE,
) -> T:
    """:func:`retry_unavailable`, each attempt given the seconds left of ``retry_timeout_s``
    as it starts (an attempt that waits for a server bounds its wait by them:
    :func:`attempt_timeout_s`); a failed attempt once ``cancel`` is set (one the event cut
    short, too) is :class:`Cancelled`, after ``on_cancel(that failure)``."""
    deadline = clock() + retry_timeout_s
    left_s = retry_timeout_s
    while True:
        try:
            return attempt(left_s)
        except RequestError as exc:
            if cancel is not None and cancel.is_set():
                on_cancel(exc)
                raise Cancelled("cancelled while retrying an unreachable server") from None
            if exc.code is not retry_code:
                raise
            now = clock()
            if now > deadline:
                raise
            try:
                _wait_to_retry(retry_backoff_s, cancel)
            except Cancelled:
                on_cancel(exc)
                raise
            left_s = deadline - now - retry_backoff_s


def attempt_timeout_s(left_s: float) -> float:
    """How long an attempt to open a session waits for its answer with ``left_s`` of its retry
    window left: that, but at least :data:`MIN_ATTEMPT_S` (the verifier's own request
    timeout caps it)."""
    return max(left_s, MIN_ATTEMPT_S)


def reopen(
    verifier: Verifier,
    first: SessionSpec,
    output: Sequence[int],
    clock: Callable[[], float],
    reconnect: int,
    retry_timeout_s: float,
    retry_backoff_s: float,
    on_give_up: Callable[[RequestError], None] = lambda exc: None,
    cancel: threading.Event | None = None,
) -> str:
    """Open a fresh session holding every committed token (``first``: the spec the
    generation opened with, ``output``: what it committed since), retrying every
    ``retry_backoff_s`` until the server is back or ``retry_timeout_s`` passed (then
    ``on_give_up(error)`` may raise its own error instead; :class:`Cancelled` within a
    backoff once ``cancel`` is set, before any attempt when it already is). Its name
    ``<session>#r<reconnect>.<attempt>`` is new for every reconnect of the generation, even
    with no progress in between. An attempt that failed is closed too: an open whose
    answer timed out may still have opened the session on the server."""
    if cancel is not None and cancel.is_set():
        raise Cancelled("cancelled before its session was reopened")
    attempts = itertools.count(1)

    def attempt(left_s: float) -> str:
        session_id = reconnect_session_id(first.session_id, reconnect, next(attempts))
        reopened = resumed_spec(first, output, session_id)
        try:
            open_bounded(verifier, reopened, attempt_timeout_s(left_s), cancel)
        except RequestError as exc:
            close_if_opened(verifier, session_id, exc)
            raise
        return session_id

    try:
        return retry_within(attempt, clock, retry_timeout_s, retry_backoff_s, cancel)
    except RequestError as exc:
        on_give_up(exc)
        raise


def reconnect_session_id(first_session_id: str, reconnect: int, attempt: int) -> str:
    """The id of a generation's ``reconnect``-th reopened session, at its ``attempt``-th
    try: new for every reconnect and try, even with no progress in between."""
    return f"{first_session_id}#r{reconnect}.{attempt}"


def resumed_spec(first: SessionSpec, output: Sequence[int], session_id: str) -> SessionSpec:
    """The session ``session_id`` that goes on from a generation opened as ``first`` once it
    committed ``output``: every committed token its prompt (the output among them counted as
    such, for the penalties), the rest of the token budget and of ``min_tokens``, a seed of
    its own (:func:`reopened_seed`), the prompt's log-probabilities asked again only while
    none was committed (they came with the first reply that committed a token)."""
    sampling = first.sampling
    remaining = dataclasses.replace(
        sampling,
        max_new_tokens=sampling.max_new_tokens - len(output),
        min_tokens=max(sampling.min_tokens - len(output), 0),
        seed=reopened_seed(sampling.seed, len(output)),
        prompt_logprobs=None if output else sampling.prompt_logprobs,
    )
    return dataclasses.replace(
        first, session_id=session_id, prompt_token_ids=(*first.prompt_token_ids, *output),
        sampling=remaining, num_prior_output_tokens=first.num_prior_output_tokens + len(output),
    )  # fmt: skip


def reopened_seed(seed: int | None, num_output: int) -> int | None:
    """The seed of a session reopened after ``num_output`` committed output tokens of a
    generation seeded ``seed`` (``None``: fresh entropy, as before). The server seeds a
    session's verification stream with its seed: reusing the generation's would draw
    again, at later positions, the uniforms that decided its first rounds."""
    if seed is None:
        return None
    state = np.random.SeedSequence([seed, 3, num_output]).generate_state(1, np.uint64)
    return int(state[0]) % SEED_LIMIT


def close_quietly(verifier: Verifier, session_id: str) -> None:
    """Close an abandoned session if the server still has it (it may be gone or down)."""
    with contextlib.suppress(RequestError):
        verifier.close(session_id)


OPEN_OUTCOME_UNKNOWN = frozenset({ErrorCode.UNAVAILABLE, ErrorCode.CANCELLED, ErrorCode.INTERNAL})
"""Codes of a failed open that may have opened the session all the same (a deadline passed
or the connection broke after the server took it; ``INTERNAL``: it failed part-way)."""


def close_if_opened(verifier: Verifier, session_id: str, failure: RequestError) -> None:
    """After an open of ``session_id`` failed with ``failure``: close it if the open may
    have happened all the same; a refused open is left alone (the id may be another
    client's open session: closing it would end theirs)."""
    if failure.code in OPEN_OUTCOME_UNKNOWN:
        close_quietly(verifier, session_id)


def open_retrying(
    verifier: Verifier,
    spec: SessionSpec,
    clock: Callable[[], float],
    retry_timeout_s: float,
    retry_backoff_s: float,
    cancel: threading.Event | None = None,
) -> None:
    """Open ``spec``, retrying every ``retry_backoff_s`` while the server is unreachable
    (``UNAVAILABLE``: down, restarting, or silent past the attempt's wait), for at most
    ``retry_timeout_s``, each attempt waiting only for what is left of it
    (:func:`attempt_timeout_s`); :class:`Cancelled` within a backoff once ``cancel`` is set
    (the last attempt closed first: it may have opened the session all the same)."""

    def attempt(left_s: float) -> None:
        open_bounded(verifier, spec, attempt_timeout_s(left_s), cancel)

    def closed(failure: RequestError) -> None:
        close_if_opened(verifier, spec.session_id, failure)

    retry_within(attempt, clock, retry_timeout_s, retry_backoff_s, cancel, closed)
