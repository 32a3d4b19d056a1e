"""The server-side baselines' stream, as ``edgespec draft --mode centralized|fused`` and the
OpenAI endpoint's centralized requests read it: the committed chunks of one ``Generate``
call, whose first chunk is asked for again while the server is unreachable (restarting),
for ``first_open_retry_s``; after it an error ends the request (the server holds no session
to resume)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator, Iterator
from typing import Any

from edgespec.runtime.edge.reconnect import RETRY_BACKOFF_S, retry_unavailable
from edgespec.runtime.messages import SessionSpec


def server_side_chunks(
    verifier: Any,
    spec: SessionSpec,
    fused: bool,
    gamma: int,
    on_logprobs: Callable[..., None] | None,
    clock: Callable[[], float],
    first_open_retry_s: float,
    cancel: threading.Event | None = None,
) -> Generator[tuple[int, ...]]:
    """The chunks of ``verifier.generate(spec, fused, gamma, on_logprobs)`` (their
    log-probabilities to ``on_logprobs`` first); the call made again every
    :data:`RETRY_BACKOFF_S` until its first chunk arrives, while the server is unreachable,
    for ``first_open_retry_s``; ``cancel`` set ends those retries
    (:class:`~edgespec.runtime.edge.reconnect.Cancelled`). Closing the generator cancels
    the call on the server."""

    def start() -> tuple[tuple[int, ...] | None, Iterator[tuple[int, ...]]]:
        stream = iter(verifier.generate(spec, fused, gamma, on_logprobs))
        return next(stream, None), stream

    first, stream = retry_unavailable(start, clock, first_open_retry_s, RETRY_BACKOFF_S,
                                      cancel)  # fmt: skip
    try:
        if first is not None:
            yield first
            yield from stream
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()
