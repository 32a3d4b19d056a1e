"""Routing told which servers are known to be down (``known_down``: the endpoint's, those
told unreachable a moment ago) does not ask them, unless that is every server; routing
asked again sees the hint as it is then. Hand-built stats sources: no server, no model."""

from __future__ import annotations

import itertools

import numpy as np

from edgespec.core.types import ServerLoad
from edgespec.policies.routing import JoinShortestQueueRouting
from edgespec.runtime.edge.routing import KNOWN_DOWN, route, route_retrying
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import ServerStats

DOWN = RequestError(ErrorCode.UNAVAILABLE, "down")


def _stats(queue: int) -> ServerStats:
    return ServerStats(queue, 0, 0, 0.0, 0, (), 0, 0, 0, 0.0, 0, 0, 0, 0, 0, 0, False)


class Source:
    """A server's ``Stats``: ``queue`` waiting, or ``error``; each call counted."""

    def __init__(self, queue: int = 0, error: RequestError | None = None) -> None:
        self._queue = queue
        self._error = error
        self.num_asked = 0

    def stats(self, timeout_s: float | None = None) -> ServerStats:
        self.num_asked += 1
        if self._error is not None:
            raise self._error
        return _stats(self._queue)


def test_a_server_known_down_is_not_asked_and_left_out() -> None:
    servers = [Source(queue=0), Source(queue=5), Source(queue=1)]
    rng = np.random.default_rng(0)
    choice = route(servers, JoinShortestQueueRouting(), rng, known_down={0})
    assert [s.num_asked for s in servers] == [0, 1, 1]
    assert choice.server_index == 2  # jsq among those asked: server 0 would have won
    assert choice.loads == (ServerLoad(1, 5, 0, False), ServerLoad(2, 1, 0, False))
    assert choice.unreachable == (0,)
    assert [(f.code, f.message) for f in choice.failures] == [(ErrorCode.UNAVAILABLE,
                                                               KNOWN_DOWN)]  # fmt: skip
    assert KNOWN_DOWN == "not asked: known to be down"


def test_every_server_known_down_is_asked() -> None:
    servers = [Source(queue=3), Source(queue=1)]
    rng = np.random.default_rng(0)
    choice = route(servers, JoinShortestQueueRouting(), rng, known_down={0, 1, 7})
    assert [s.num_asked for s in servers] == [1, 1]  # one may be back
    assert (choice.server_index, choice.unreachable) == (1, ())


def test_routing_asked_again_sees_the_hint_as_it_is_then() -> None:
    """Round 1: server 1 known down, server 0 refuses the connection; round 2: server 1's
    state is no longer fresh, so it is asked, and answers."""
    servers = [Source(error=DOWN), Source(queue=0)]
    hints = iter([frozenset({1}), frozenset()])
    ticks = itertools.count(0.0, 0.01)
    choice, left_s = route_retrying(servers, JoinShortestQueueRouting(),
                                    np.random.default_rng(0), lambda: next(ticks), 5.0, 0.0,
                                    known_down=lambda: next(hints))  # fmt: skip
    assert [s.num_asked for s in servers] == [2, 1]
    assert (choice.server_index, choice.unreachable) == (1, (0,))
    assert choice.failures == (DOWN,)
    assert 0 < left_s < 5.0
