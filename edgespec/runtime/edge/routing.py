"""Routing a new request across several verification servers, with the same routing
policy objects the simulator uses.

Call order: :func:`server_loads` asks every server for its live load (the ``Stats`` RPC)
and builds the :class:`~edgespec.core.types.ServerLoad` list the policy sees (one meaning
per field, as in the simulator: ``queue_depth`` = verifications waiting, not yet in a
batch; ``num_active_sessions`` = sessions the server holds; ``busy`` = a verification pass
is running); :func:`route` shows them to the policy as a
:class:`~edgespec.policies.loads.LoadView`, as the simulator does, calls it once and
checks its answer
(:func:`edgespec.policies.contracts.check_route`). A server that does not answer is left
out of the loads (and named in ``unreachable``), so one dead server does not stop the
others from taking requests. :func:`route_retrying` asks again while none answers, and
says what is left of the retry budget for the chosen server's first open.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from edgespec.core.types import ServerLoad
from edgespec.policies.contracts import check_route
from edgespec.policies.interfaces import RoutingPolicy
from edgespec.policies.loads import LoadView
from edgespec.runtime.edge.reconnect import retry_unavailable
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import ServerStats


class StatsSource(Protocol):
    def stats(self) -> ServerStats: ...


@dataclass(frozen=True, slots=True)
class RouteChoice:
    """The chosen server's index, the loads the policy saw, the servers whose ``Stats``
    failed (by index) and each one's failure, in that order (unreachable, or its token
    refused)."""

    server_index: int
    loads: tuple[ServerLoad, ...]
    unreachable: tuple[int, ...]
    failures: tuple[RequestError, ...] = ()


def load_from_stats(server_id: int, stats: ServerStats) -> ServerLoad:
    return ServerLoad(server_id, stats.queue_depth, stats.num_sessions, stats.busy)


def server_loads(servers: Sequence[StatsSource]) -> tuple[list[ServerLoad], list[int]]:
    """(loads of the servers that answered, indices of those that did not)."""
    loads, failed = _polled(servers)
    return loads, list(failed)


def _polled(
    servers: Sequence[StatsSource],
) -> tuple[list[ServerLoad], dict[int, RequestError]]:
    """(loads of the servers that answered, each other one's failure by index)."""
    loads: list[ServerLoad] = []
    failed: dict[int, RequestError] = {}
    for index, server in enumerate(servers):
        try:
            loads.append(load_from_stats(index, server.stats()))
        except RequestError as exc:
            failed[index] = exc
    return loads, failed


def route(
    servers: Sequence[StatsSource], policy: RoutingPolicy, rng: np.random.Generator
) -> RouteChoice:
    """Where a new request goes; ``UNAVAILABLE`` when no server answers
    (:func:`route_retrying` asks again), or every one's refusal (:func:`_none_took`)."""
    loads, failed = _polled(servers)
    if not loads:
        raise _none_took(list(failed.values()))
    view = LoadView(loads)
    chosen = check_route(policy, policy.route(view, rng), view)
    return RouteChoice(chosen, tuple(loads), tuple(failed), tuple(failed.values()))


def _none_took(failures: list[RequestError]) -> RequestError:
    """The error of a route no server took: ``UNAVAILABLE`` while one of them may come back
    (asked again); when every one refused the call (the client's token, say: waiting does
    not change that), the first refusal's code, at once."""
    refused = [exc for exc in failures if exc.code is not ErrorCode.UNAVAILABLE]
    none = f"none of the {len(failures)} servers"
    if len(refused) < len(failures) or not refused:
        return RequestError(ErrorCode.UNAVAILABLE, f"{none} answered a Stats call")
    return RequestError(refused[0].code, f"{none} took a Stats call: {refused[0].message}")


def route_retrying(
    servers: Sequence[StatsSource],
    policy: RoutingPolicy,
    rng: np.random.Generator,
    clock: Callable[[], float],
    retry_timeout_s: float,
    retry_backoff_s: float,
    cancel: threading.Event | None = None,
) -> tuple[RouteChoice, float]:
    """:func:`route`, asked again every ``retry_backoff_s`` while no server answers (the
    servers restarting), for at most ``retry_timeout_s``
    (:func:`~edgespec.runtime.edge.reconnect.retry_unavailable`; its ``Cancelled`` within a
    backoff once ``cancel`` is set); with the seconds of ``retry_timeout_s`` routing left
    (at least 0), which are all the chosen server's first open may retry for: a new
    request's routing and first open share one retry budget."""
    start_s = clock()
    choice = retry_unavailable(lambda: route(servers, policy, rng), clock, retry_timeout_s,
                               retry_backoff_s, cancel)  # fmt: skip
    return choice, max(0.0, retry_timeout_s - (clock() - start_s))
