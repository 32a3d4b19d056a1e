"""The server-side baselines' stream, as ``edgespec draft --mode centralized|fused``, the
OpenAI endpoint's centralized requests and ``bench serve``'s centralized clients read it
(:func:`resumed_chunks`): the committed chunks of a ``Generate`` call, whose first chunk is
asked for again while the server is unreachable (restarting). A stream the server lost once
it had streamed (restarted, gone) goes on where it was cut: a new ``Generate`` with every
committed token as its prompt, as a distributed generation's lost session is reopened
(:func:`~edgespec.runtime.edge.reconnect.resumed_spec`), so a greedy output is the one an
uncut stream gives and a sampled one stays identically distributed; within the
generation's progress budget."""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator, Iterator
from typing import Any

from edgespec.runtime.edge.progress import ProgressBudget, ProgressWatch
from edgespec.runtime.edge.reconnect import (
    RETRY_BACKOFF_S,
    reconnect_session_id,
    resumed_spec,
    retry_unavailable,
)
from edgespec.runtime.edge.round_loop import RECOVERABLE
from edgespec.runtime.errors import RequestError
from edgespec.runtime.messages import SessionSpec

OnReconnect = Callable[[RequestError, int, float], None]


def _first_chunk_retried(
    start: Callable[[SessionSpec], Iterator[tuple[int, ...]]],
    spec: SessionSpec,
    clock: Callable[[], float],
    retry_s: float,
    cancel: threading.Event | None,
) -> Generator[tuple[int, ...]]:
    """The chunks of the stream ``start(spec)`` opens, opened again every
    :data:`RETRY_BACKOFF_S` until its first chunk arrives, while the server is unreachable,
    for ``retry_s``; ``cancel`` set ends those retries
    (:class:`~edgespec.runtime.edge.reconnect.Cancelled`). Closing the generator cancels
    the call on the server."""

    def attempt() -> tuple[tuple[int, ...] | None, Iterator[tuple[int, ...]]]:
        stream = iter(start(spec))
        return next(stream, None), stream

    first, stream = retry_unavailable(attempt, clock, retry_s, RETRY_BACKOFF_S, cancel)
    try:
        if first is not None:
            yield first
            yield from stream
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()


def resumed_chunks(
    verifier: Any,
    spec: SessionSpec,
    fused: bool,
    gamma: int,
    on_logprobs: Callable[..., None] | None,
    clock: Callable[[], float],
    retry_s: tuple[float, float],
    budget: ProgressBudget,
    cancel: threading.Event | None = None,
    on_reconnect: OnReconnect | None = None,
    on_prompt_logprobs: Callable[..., None] | None = None,
) -> Generator[tuple[int, ...]]:
    """The chunks of ``verifier.generate(spec, fused, gamma, on_logprobs)`` (their
    log-probabilities to ``on_logprobs`` first, the prompt's, when ``spec`` asks, to
    ``on_prompt_logprobs`` before the first chunk), its first asked again while the server is
    unreachable (``retry_s``: for the first open, then for a resumed stream, the
    generation's ``retry_timeout_s``, no longer than is left of ``budget``'s time; ``cancel``
    set ends those retries), gone on after a
    :data:`~edgespec.runtime.edge.round_loop.RECOVERABLE` error once the stream has
    streamed: a new stream (``<session>#r<k>.1``) from every committed token, the server's
    own error raised once ``budget`` (its reconnects in a row and its seconds without a
    token: :class:`~edgespec.runtime.edge.progress.NoProgress`) is spent. ``on_reconnect``
    hears the error, the tokens committed and the retry time, as each resumes."""

    def start(current: SessionSpec) -> Iterator[tuple[int, ...]]:
        return iter(verifier.generate(current, fused, gamma, on_logprobs, on_prompt_logprobs))

    watch = ProgressWatch(budget, clock)
    output: list[int] = []
    current, open_retry_s, reconnects = spec, retry_s[0], 0
    while True:
        chunks = _first_chunk_retried(start, current, clock, open_retry_s, cancel)
        streamed = False
        try:
            for chunk in chunks:
                streamed = True
                output.extend(chunk)
                watch.committed(len(output))
                yield chunk
            return
        except RequestError as exc:
            left = spec.sampling.max_new_tokens - len(output)
            if exc.code not in RECOVERABLE or not (streamed or reconnects) or left <= 0:
                raise
            watch.reconnect(exc)
            open_retry_s = min(retry_s[1], watch.remaining_s())  # within the progress budget
            if on_reconnect is not None:
                on_reconnect(exc, len(output), open_retry_s)
        finally:
            chunks.close()
        reconnects += 1
        session_id = reconnect_session_id(spec.session_id, reconnects, 1)
        current = resumed_spec(spec, output, session_id)
