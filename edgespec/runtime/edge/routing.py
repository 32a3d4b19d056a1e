"""Routing a new request across several verification servers, with the same routing
policy objects the simulator uses.

Call order: :func:`server_loads` asks every server for its live load (the ``Stats`` RPC)
and builds the :class:`~edgespec.core.types.ServerLoad` list the policy sees (one meaning
per field, as in the simulator: ``queue_depth`` = verifications waiting, not yet in a
batch; ``num_active_sessions`` = sessions the server holds; ``busy`` = a verification pass
is running); :func:`route` shows them to the policy as a
:class:`~edgespec.policies.loads.LoadView`, as the simulator does, calls it once and
checks its answer
(:func:`edgespec.policies.contracts.decide_route`). Every server is asked at once, each
``Stats`` waited for at most :data:`~edgespec.runtime.edge.reconnect.MIN_ATTEMPT_S` (a
server that takes the call and never answers, hung, holds a routing round no longer, not a
request timeout per server); a server that does not answer in time is left out of the
loads (and named in ``unreachable``), so one dead or hung server does not stop the others
from taking requests. :func:`route_retrying` asks again while none answers, and says what
is left of the retry budget for the chosen server's first open.

A caller that watches the servers may say which ones it knows to be down (``known_down``:
the endpoint's, those told unreachable within the last few seconds,
:meth:`~edgespec.runtime.openai_api.health.Health.known_down`): they are not asked, but
left out as servers that did not answer, so a hung one does not cost every request its
1 s; when that is every server, every one is asked (one may be back). A hint, no policy:
routing without one (``edgespec draft``) asks them all.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from edgespec.core.types import ServerLoad
from edgespec.policies.contracts import decide_route
from edgespec.policies.interfaces import RoutingPolicy
from edgespec.policies.loads import LoadView, server_load
from edgespec.runtime.edge.reconnect import (
    MIN_ATTEMPT_S,
    RETRY_BACKOFF_S,
    Cancelled,
    retry_unavailable,
)
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import ServerStats


class StatsSource(Protocol):
    def stats(self, timeout_s: float | None = None) -> ServerStats:
        """The server's counters, answered within ``timeout_s`` (else ``UNAVAILABLE``)."""
        ...


@dataclass(frozen=True, slots=True)
class RouteChoice:
    """The chosen server's index, the loads the policy saw, the servers whose ``Stats``
    failed (by index) and each one's failure, in that order (unreachable, its token
    refused, or not asked: :data:`KNOWN_DOWN`)."""

    server_index: int
    loads: tuple[ServerLoad, ...]
    unreachable: tuple[int, ...]
    failures: tuple[RequestError, ...] = ()


def load_from_stats(server_id: int, stats: ServerStats) -> ServerLoad:
    """The load of server ``server_id`` (its index) by its ``Stats`` answer."""
    return server_load(
        server_id,
        num_active_sessions=stats.num_sessions,
        queue_depth=stats.queue_depth,
        busy=stats.busy,
    )


def server_loads(
    servers: Sequence[StatsSource], timeout_s: float = MIN_ATTEMPT_S
) -> tuple[list[ServerLoad], list[int]]:
    """(loads of the servers that answered within ``timeout_s``, indices of the others)."""
    loads, failed = _polled(servers, timeout_s, None)
    return loads, list(failed)


def _polled(
    servers: Sequence[StatsSource],
    timeout_s: float,
    cancel: threading.Event | None,
    known_down: Collection[int] = frozenset(),
) -> tuple[list[ServerLoad], dict[int, RequestError]]:
    """(loads of the servers that answered, each other one's failure by index): every
    server but those :func:`_skipped` of ``known_down`` asked at once, on a thread of its
    own, its answer waited for at most ``timeout_s`` (a call still unanswered then ends at
    its own deadline, the same); :class:`~edgespec.runtime.edge.reconnect.Cancelled` within
    a backoff once ``cancel`` is set. A failure other than a :class:`RequestError` is a
    bug: raised."""
    skipped = _skipped(len(servers), known_down)
    pool = ThreadPoolExecutor(max(1, len(servers)), "edgespec-routing")
    try:
        asked = {index: pool.submit(server.stats, timeout_s)
                 for index, server in enumerate(servers) if index not in skipped}  # fmt: skip
        _waited(list(asked.values()), timeout_s, cancel)
    finally:
        pool.shutdown(wait=False)
    loads: list[ServerLoad] = []
    failed: dict[int, RequestError] = {}
    for index in range(len(servers)):
        answer = asked.get(index)
        if answer is None:
            failed[index] = RequestError(ErrorCode.UNAVAILABLE, KNOWN_DOWN)
            continue
        error = answer.exception() if answer.done() else _silent(timeout_s)
        if error is None:
            loads.append(load_from_stats(index, answer.result()))
        elif isinstance(error, RequestError):
            failed[index] = error
        else:
            raise error
    return loads, failed


KNOWN_DOWN = "not asked: known to be down"
"""The failure (``UNAVAILABLE``) of a server routing did not ask, its caller knowing it down."""


def _skipped(num_servers: int, known_down: Collection[int]) -> frozenset[int]:
    """The servers (indices) of ``known_down`` routing does not ask: none when that is every
    one of the ``num_servers`` (one may be back, and routing without an answer fails)."""
    skipped = frozenset(index for index in known_down if 0 <= index < num_servers)
    return frozenset() if len(skipped) >= num_servers else skipped


def _waited(
    asked: list[Future[ServerStats]], timeout_s: float, cancel: threading.Event | None
) -> None:
    """Wait until every call in ``asked`` answered or ``timeout_s`` passed, looking at
    ``cancel`` every :data:`~edgespec.runtime.edge.reconnect.RETRY_BACKOFF_S`."""
    if cancel is None:
        wait(asked, timeout_s)
        return
    num_slices = max(1, math.ceil(timeout_s / RETRY_BACKOFF_S))
    pending = set(asked)
    for _ in range(num_slices):
        if cancel.is_set():
            raise Cancelled("cancelled while routing")
        pending = wait(pending, timeout_s / num_slices).not_done
        if not pending:
            return


def _silent(timeout_s: float) -> RequestError:
    """The failure of a server that did not answer its ``Stats`` call in time."""
    return RequestError(ErrorCode.UNAVAILABLE, f"no answer to a Stats call within {timeout_s:g} s")


def route(
    servers: Sequence[StatsSource],
    policy: RoutingPolicy,
    rng: np.random.Generator,
    timeout_s: float = MIN_ATTEMPT_S,
    cancel: threading.Event | None = None,
    known_down: Collection[int] = frozenset(),
) -> RouteChoice:
    """Where a new request goes, by the loads of the servers that answered within
    ``timeout_s`` (those ``known_down`` not asked, unless that is all of them);
    ``UNAVAILABLE`` when none did (:func:`route_retrying` asks again), or every one's
    refusal (:func:`_none_took`); :class:`Cancelled` once ``cancel`` is set."""
    loads, failed = _polled(servers, timeout_s, cancel, known_down)
    if not loads:
        raise _none_took(failed)
    view = LoadView(loads)
    chosen = decide_route(policy, view, rng)
    return RouteChoice(chosen, tuple(loads), tuple(failed), tuple(failed.values()))


class NoRoute(RequestError):
    """A route no server took; ``failures``: each server's failure, by its index."""

    def __init__(self, code: ErrorCode, message: str, failures: dict[int, RequestError]) -> None:
        super().__init__(code, message)
        self.failures = failures


def _none_took(failed: dict[int, RequestError]) -> NoRoute:
    """The error of a route no server took (``failed``: each one's failure): ``UNAVAILABLE``
    while one of them may come back (asked again), naming a refusal among them (a token a
    server does not take is not an outage); when every one refused the call (the client's
    token, say: waiting does not change that), the first refusal's code, at once."""
    failures = list(failed.values())
    refused = [exc for exc in failures if exc.code is not ErrorCode.UNAVAILABLE]
    none = f"none of the {len(failures)} servers"
    if not refused:
        return NoRoute(ErrorCode.UNAVAILABLE, f"{none} answered a Stats call", failed)
    if len(refused) < len(failures):
        return NoRoute(ErrorCode.UNAVAILABLE, f"{none} took a Stats call: {len(refused)} "
                       f"refused it ({refused[0]}), the others did not answer", failed)  # fmt: skip
    return NoRoute(refused[0].code, f"{none} took a Stats call: {refused[0].message}", failed)


def route_retrying(
    servers: Sequence[StatsSource],
    policy: RoutingPolicy,
    rng: np.random.Generator,
    clock: Callable[[], float],
    retry_timeout_s: float,
    retry_backoff_s: float,
    cancel: threading.Event | None = None,
    known_down: Callable[[], Collection[int]] | None = None,
) -> tuple[RouteChoice, float]:
    """:func:`route`, asked again every ``retry_backoff_s`` while no server answers (the
    servers restarting, or silent for a round's :data:`MIN_ATTEMPT_S`), for at most
    ``retry_timeout_s`` (:func:`~edgespec.runtime.edge.reconnect.retry_unavailable`; the
    last round may end up to :data:`MIN_ATTEMPT_S` later; ``Cancelled`` within a backoff
    once ``cancel`` is set), each round leaving out the servers ``known_down()`` says then
    (``None``: none); with the seconds of ``retry_timeout_s`` routing left (at least 0),
    which are all the chosen server's first open may retry for: a new request's routing and
    first open share one retry budget."""

    def one_round() -> RouteChoice:
        down = frozenset() if known_down is None else known_down()
        return route(servers, policy, rng, MIN_ATTEMPT_S, cancel, down)

    start_s = clock()
    choice = retry_unavailable(one_round, clock, retry_timeout_s, retry_backoff_s, cancel)
    return choice, max(0.0, retry_timeout_s - (clock() - start_s))
