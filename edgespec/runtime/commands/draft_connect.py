"""``edgespec draft`` reaching its verification server before anything loads: the one
``--server``, or the one ``--routing`` picks from several (asked again while none answers,
as the endpoint's requests ask: :func:`~edgespec.runtime.edge.routing.route_retrying`;
several of different targets refused), its Health (vocabulary size, limits, target name),
its token checked, and what routing left of ``--retry-timeout-s`` for the first open
(:class:`Reached`: each server's Health asked once, kept for the rest of the start). The
endpoint waits for its servers as it starts (:func:`connect_waiting`: it may start before
them, under systemd), saying so every :data:`START_PROGRESS_S`."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from edgespec.runtime.commands.stages import Stages

if TYPE_CHECKING:
    from edgespec.runtime.messages import ServerHealth

ONE_TARGET_WHY = "routing may send the prompt to any"
"""Why ``edgespec draft``'s servers must serve one target."""

START_PROGRESS_S = 5.0
"""How often the endpoint says, as it starts, that it still waits for its servers."""


@dataclass(frozen=True, slots=True)
class Reached:
    """The server a drafter reached as it started: its client, its address and what its
    Health said; what every server that answered its Health then said (the endpoint's
    :func:`~edgespec.runtime.openai_api.server_facts.learn` reads them, not asking again);
    and how long its first open may retry while it is unreachable."""

    verifier: Any
    address: str
    health: ServerHealth
    told: dict[str, ServerHealth]
    open_retry_s: float


def routed_verifier(
    config: Any, routing: Any, retry_timeout_s: float, why: str = ONE_TARGET_WHY,
    one_waits: bool = False,
) -> tuple[Any, str, float, dict[str, ServerHealth]]:  # fmt: skip
    """A client of ``config.server`` and its address, whose first open is not retried (0 s;
    ``one_waits``: ``retry_timeout_s``), no Health asked; or of the server ``routing``
    (``config.routing``'s policy) picks from them, asked again while none answers for up to
    ``retry_timeout_s`` (0: asked once), with what routing left of it for the first open and
    the Health of each that answered it (:func:`.server_facts.described`); the servers that did not
    answer and the choice said on stderr. A server that refuses the token is a
    ``UserInputError`` naming it, as one ``--server``'s (and the endpoint's, over
    several): not a server that did not answer. Servers of different targets are refused
    once one answers, as the endpoint refuses them
    (:func:`~edgespec.runtime.openai_api.server_facts.check_one_model`: each that answers
    its Health named, and ``why``)."""
    import numpy as np

    from edgespec.runtime.edge.reconnect import RETRY_BACKOFF_S
    from edgespec.runtime.edge.routing import NoRoute, route, route_retrying
    from edgespec.runtime.errors import ErrorCode
    from edgespec.runtime.openai_api.server_facts import check_one_model, described
    from edgespec.runtime.wire.drafter_clients import drafter_clients

    verifiers = drafter_clients(config)
    if len(verifiers) == 1:
        return verifiers[0], config.servers[0], retry_timeout_s if one_waits else 0.0, {}
    rng = np.random.default_rng()
    try:
        if retry_timeout_s > 0:
            choice, left_s = route_retrying(verifiers, routing, rng, time.perf_counter,
                                            retry_timeout_s, RETRY_BACKOFF_S)  # fmt: skip
        else:
            choice, left_s = route(verifiers, routing, rng), 0.0
    except NoRoute as exc:  # a server refusing the token says so, the others down or not
        refusal = next(((i, f) for i, f in exc.failures.items()
                        if f.code is ErrorCode.UNAUTHENTICATED), None)  # fmt: skip
        if refusal is not None:
            raise verifiers[refusal[0]].token_refused(refusal[1]) from None
        raise
    answered = [i for i in range(len(verifiers)) if i not in choice.unreachable]  # not a hung
    told = described(tuple(config.servers[i] for i in answered),  # one's whole call timeout
                     tuple(verifiers[i] for i in answered))  # fmt: skip
    check_one_model(told, why)
    _say_routed(config, verifiers, choice)
    index = choice.server_index
    return verifiers[index], config.servers[index], left_s, told


def _say_routed(config: Any, verifiers: tuple[Any, ...], choice: Any) -> None:
    """The servers that did not answer routing, and its choice, on stderr; one that refused
    the token, a ``UserInputError`` naming it."""
    from edgespec.runtime.errors import ErrorCode

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


def connect(
    config: Any, routing: Any, say: Stages, retry_timeout_s: float, why: str = ONE_TARGET_WHY,
    one_waits: bool = False,
) -> Reached:  # fmt: skip
    """The verifier (said as it is reached; :func:`routed_verifier`, ``why`` and
    ``one_waits`` its), its Health (routing's answer, else asked again while the chosen
    server is unreachable, within what routing left: one Health call a server), its token
    checked (one the server does not take: a ``UserInputError`` before anything loads), and
    how long its first open may then retry while the server is unreachable."""
    from edgespec.runtime.edge.reconnect import RETRY_BACKOFF_S, retry_unavailable

    say(f"connecting to {', '.join(config.servers)}")
    verifier, address, open_retry_s, told = routed_verifier(config, routing, retry_timeout_s,
                                                            why, one_waits)  # fmt: skip
    start_s = time.perf_counter()
    health = told.get(address)
    if health is None:
        health = retry_unavailable(verifier.describe, time.perf_counter, open_retry_s,
                                   RETRY_BACKOFF_S)  # fmt: skip
    verifier.check_credentials()
    left_s = max(0.0, open_retry_s - (time.perf_counter() - start_s))
    return Reached(verifier, address, health, {**told, address: health}, left_s)


def connect_waiting(
    config: Any, routing: Any, say: Stages, clock: Callable[[], float] = time.perf_counter,
    every_s: float = START_PROGRESS_S,
) -> Reached:  # fmt: skip
    """The endpoint's :func:`connect` as it starts: its servers, the one ``--server`` too,
    waited for up to ``--retry-timeout-s`` while none answers (it may start before them),
    a line on stderr every ``every_s`` meanwhile; then the last failure (exit 1). Several
    of different targets are refused as the endpoint's (one model)."""
    from edgespec.runtime.openai_api.server_facts import ONE_MODEL_WHY

    servers = ", ".join(config.servers)
    with _said_while_waiting(servers, config.retry_timeout_s, clock, every_s):
        return connect(config, routing, say, config.retry_timeout_s, ONE_MODEL_WHY,
                       one_waits=True)  # fmt: skip


@contextmanager
def _said_while_waiting(
    servers: str, wait_s: float, clock: Callable[[], float], every_s: float
) -> Iterator[None]:
    """While the block runs, a line every ``every_s`` that it still waits for ``servers``,
    up to ``wait_s``, on ``clock``."""
    done = threading.Event()
    start_s = clock()

    def tell() -> None:
        while not done.wait(every_s):
            print(f"edgespec draft: no verification server answers yet ({servers}): waited "
                  f"{clock() - start_s:.0f} s of --retry-timeout-s ({wait_s:g} s)",
                  file=sys.stderr, flush=True)  # fmt: skip

    teller = threading.Thread(target=tell, name="edgespec-start-wait", daemon=True)
    teller.start()
    try:
        yield
    finally:
        done.set()
        teller.join()
