"""A new request waits for a verification server at most ``retry_timeout_s`` in all: with
several servers, routing (asked again while none answers) and the chosen server's first
open share that one budget, the open retrying only for what routing left. It could wait
twice as long: routing took up to ``retry_timeout_s``, then the first open as long again.

No network, no model: two fake servers on a hand-advanced clock, every call taking
:data:`CALL_S` of it. Both answer ``Stats`` from :data:`UP_S` on (routing succeeds at 6 s:
three rounds of two calls), then every open fails ``UNAVAILABLE`` (the chosen one went
down again)."""

from __future__ import annotations

import threading

import pytest

from edgespec.config import from_dict
from edgespec.policies.registry import build_policy
from edgespec.runtime.edge.config import DrafterConfig
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import ServerStats, SessionSpec
from edgespec.runtime.openai_api.edge_setup import EdgeSetup
from edgespec.runtime.openai_api.errors import ApiError
from edgespec.runtime.openai_api.generation import prepare, run_request
from edgespec.runtime.openai_api.schema import Defaults, Limits, parse_request
from tests.runtime.openai_api.conftest import MODEL, word_tokenizer
from tests.runtime.round_fakes import Clock

RETRY_TIMEOUT_S = 10.0
CALL_S = 1.0
"""Fake seconds every Stats and open call takes."""
UP_S = 4.0
"""The servers answer Stats calls that start at or after this time."""


def _down() -> RequestError:
    return RequestError(ErrorCode.UNAVAILABLE, "failed to connect to all addresses")


class Restarting:
    """A server on ``clock``: ``Stats`` fails until :data:`UP_S`; every open fails (each
    recorded by the time it started in ``opens``), and so does every close."""

    def __init__(self, clock: Clock, opens: list[float], lock: threading.Lock) -> None:
        self.clock, self.opens, self.lock = clock, opens, lock

    def stats(self, timeout_s: float | None = None) -> ServerStats:
        with self.lock:  # routing asks the servers at once, each on a thread of its own
            started = self.clock.t
            self.clock.t += CALL_S
        if started < UP_S:
            raise _down()
        return ServerStats(0, 0, 0, 0.0, 0, (), 0, 0, 0, 0.0, 0, 0, 0, 0, 0, 0)

    def open(self, spec: SessionSpec) -> None:
        self.opens.append(self.clock.t)
        self.clock.t += CALL_S
        raise _down()

    def close(self, session_id: str) -> None:
        raise _down()


def _request(num_servers: int) -> tuple[Clock, list[float], ApiError]:
    """A completion over ``num_servers`` restarting servers: the clock, the opens' start
    times, and the error the request ended with."""
    config = from_dict(DrafterConfig, {"server": ",".join(["127.0.0.1:1"] * num_servers),
                                       "draft": "ngram",
                                       "retry_timeout_s": RETRY_TIMEOUT_S})  # fmt: skip
    clock, opens = Clock(), list[float]()
    lock = threading.Lock()
    servers = tuple(Restarting(clock, opens, lock) for _ in range(num_servers))
    routing = build_policy("routing", config.routing.name, config.routing.params)
    setup = EdgeSetup(config, None, word_tokenizer(64), 64, 24, servers, routing, clock=clock)
    body = {"model": MODEL, "prompt": "w1 w2", "max_tokens": 4}
    prepared = prepare(setup, parse_request(body, False, Defaults(), Limits()), Limits())
    with pytest.raises(ApiError) as info:
        run_request(setup, prepared, lambda text, logprobs: None, threading.Event())
    return clock, opens, info.value


def test_routing_and_the_first_open_share_one_retry_timeout() -> None:
    clock, opens, error = _request(2)
    assert (error.status, error.message) == (503, "the verification server is unreachable: "
                                             "failed to connect to all addresses; retry after "
                                             "1s")  # fmt: skip
    # routing took 6 s, so the open retried for the 4 s left (it retried for 10 s more, to
    # 17 s); every attempt started within the budget, the last one's own call after it
    assert opens == [6.0, 7.0, 8.0, 9.0, 10.0]
    assert max(opens) <= RETRY_TIMEOUT_S
    assert clock.t == RETRY_TIMEOUT_S + CALL_S


def test_one_server_s_first_open_has_the_whole_retry_timeout() -> None:
    """No routing: the budget is all the open's (as it was)."""
    clock, opens, error = _request(1)
    assert error.status == 503
    assert opens == [float(t) for t in range(11)]
    assert clock.t == RETRY_TIMEOUT_S + CALL_S
