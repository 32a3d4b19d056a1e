"""``edgespec draft`` reaching its verification server before anything loads: the one
``--server``, or the one ``--routing`` picks from several (asked again while none answers,
as the endpoint's requests ask: :func:`~edgespec.runtime.edge.routing.route_retrying`),
its vocabulary size, its token checked, and what routing left of ``--retry-timeout-s`` for
the first open."""

from __future__ import annotations

import sys
import time
from typing import Any

from edgespec.runtime.commands.stages import Stages


def routed_verifier(config: Any, routing: Any, retry_timeout_s: float) -> tuple[Any, float]:
    """A client of ``config.server``, whose first open is not retried (0 s); or of the
    server ``routing`` (``config.routing``'s policy) picks from them, asked again while
    none answers for up to ``retry_timeout_s`` (0: asked once), with what routing left of
    it for the first open; the servers that did not answer and the choice said on stderr.
    A server that refuses the token is a ``UserInputError`` naming it, as one
    ``--server``'s (and the endpoint's, over several): not a server that did not answer."""
    import numpy as np

    from edgespec.runtime.edge.reconnect import RETRY_BACKOFF_S
    from edgespec.runtime.edge.routing import route, route_retrying
    from edgespec.runtime.errors import ErrorCode, RequestError
    from edgespec.runtime.wire.drafter_clients import drafter_clients

    verifiers = drafter_clients(config)
    if len(verifiers) == 1:
        return verifiers[0], 0.0
    rng = np.random.default_rng()
    try:
        if retry_timeout_s > 0:
            choice, left_s = route_retrying(verifiers, routing, rng, time.perf_counter,
                                            retry_timeout_s, RETRY_BACKOFF_S)  # fmt: skip
        else:
            choice, left_s = route(verifiers, routing, rng), 0.0
    except RequestError as exc:
        if exc.code is ErrorCode.UNAUTHENTICATED:  # every server refused: the first says so
            for verifier in verifiers:
                verifier.check_credentials()
        raise
    for index, failure in zip(choice.unreachable, choice.failures, strict=True):
        if failure.code is ErrorCode.UNAUTHENTICATED:
            raise verifiers[index].token_refused(failure)
        said = ("did not answer" if failure.code is ErrorCode.UNAVAILABLE
                else f"refused its Stats call ({failure})")  # fmt: skip
        print(f"edgespec draft: server {config.servers[index]} {said}", file=sys.stderr)
    load = next(x for x in choice.loads if x.server_id == choice.server_index)
    print(
        f"edgespec draft: {config.routing.name} routed to {config.servers[choice.server_index]} "
        f"(queue {load.queue_depth}, sessions {load.num_active_sessions})",
        file=sys.stderr,
    )
    return verifiers[choice.server_index], left_s


def connect(
    config: Any, routing: Any, say: Stages, retry_timeout_s: float
) -> tuple[Any, int, float]:
    """The verifier (said as it is reached; :func:`routed_verifier`), its vocabulary size
    (asked again while the chosen server is unreachable, within what routing left), its
    token checked (one the server does not take: a ``UserInputError`` before anything
    loads), and how long its first open may then retry while the server is unreachable."""
    from edgespec.runtime.edge.reconnect import RETRY_BACKOFF_S, retry_unavailable

    say(f"connecting to {', '.join(config.servers)}")
    verifier, open_retry_s = routed_verifier(config, routing, retry_timeout_s)
    start_s = time.perf_counter()
    vocab_size = retry_unavailable(verifier.vocab_size, time.perf_counter, open_retry_s,
                                   RETRY_BACKOFF_S)  # fmt: skip
    verifier.check_credentials()
    return verifier, vocab_size, max(0.0, open_retry_s - (time.perf_counter() - start_s))
