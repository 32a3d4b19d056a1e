"""``--routing`` over several servers asks Health of those that answered its Stats only: a
server routing left out (hung: its Stats unanswered within 1 s) was asked too, one server
after another, each for the whole ``--request-timeout-s`` (30 s by default), before anything
loaded. An edge review found it."""

from __future__ import annotations

import types
from typing import Any

import numpy as np
import pytest

import edgespec.runtime.wire.drafter_clients as drafter_clients
from edgespec.policies.routing import JoinShortestQueueRouting
from edgespec.runtime.commands.draft_connect import routed_verifier
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import ServerHealth, ServerStats

HEALTH = ServerHealth(True, 50, "t", 8, 4096, None, None)
STATS = ServerStats(0, 0, 0, 0.0, 0, (), 0, 0, 0, 0.0, 0, 0, 0, 0, 0, 0)


class _Server:
    """A client whose server answers (``up``) or not: its calls recorded."""

    def __init__(self, up: bool) -> None:
        self.up = up
        self.asked: list[str] = []

    def stats(self, timeout_s: float | None = None) -> ServerStats:
        self.asked.append("Stats")
        if not self.up:
            raise RequestError(ErrorCode.UNAVAILABLE, "Deadline Exceeded")
        return STATS

    def describe(self) -> ServerHealth:
        self.asked.append("Health")
        if not self.up:
            raise RequestError(ErrorCode.UNAVAILABLE, "Deadline Exceeded")
        return HEALTH


def test_a_server_routing_left_out_is_not_asked_its_health(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    up, hung = _Server(True), _Server(False)
    clients: Any = lambda config: (up, hung)  # noqa: E731
    monkeypatch.setattr(drafter_clients, "drafter_clients", clients)
    config = types.SimpleNamespace(
        servers=("a:1", "b:1"), routing=types.SimpleNamespace(name="jsq")
    )
    verifier, address, _, told = routed_verifier(config, JoinShortestQueueRouting(), 0.0)
    assert (verifier, address, told) == (up, "a:1", {"a:1": HEALTH})
    assert hung.asked == ["Stats"]  # was ["Stats", "Health"]
    assert capsys.readouterr().err.splitlines() == [
        "edgespec draft: server b:1 did not answer",
        "edgespec draft: jsq routed to a:1 (queue 0, sessions 0)",
    ]


class _RefusesToken(_Server):
    def stats(self, timeout_s: float | None = None) -> ServerStats:
        self.asked.append("Stats")
        raise RequestError(ErrorCode.UNAUTHENTICATED, "invalid auth token")

    def token_refused(self, exc: RequestError) -> Exception:
        return RuntimeError(f"--auth-token: the server a:1 does not take it ({exc})")


def test_a_token_refused_while_the_other_servers_are_down_is_said(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """It was ``UNAVAILABLE: none of the 2 servers answered a Stats call``: the server that
    refused the token answered, and that is what the user must fix."""
    clients: Any = lambda config: (_RefusesToken(True), _Server(False))  # noqa: E731
    monkeypatch.setattr(drafter_clients, "drafter_clients", clients)
    config = types.SimpleNamespace(
        servers=("a:1", "b:1"), routing=types.SimpleNamespace(name="jsq")
    )
    with pytest.raises(RuntimeError, match=r"^--auth-token: the server a:1 does not take it "):
        routed_verifier(config, JoinShortestQueueRouting(), 0.0)


def test_the_route_error_names_a_refusal_among_the_servers_down() -> None:
    from edgespec.runtime.edge.routing import route

    servers = (_RefusesToken(True), _Server(False))
    with pytest.raises(RequestError) as info:
        route(servers, JoinShortestQueueRouting(), np.random.default_rng(0))
    assert (info.value.code, info.value.message) == (
        ErrorCode.UNAVAILABLE,
        "none of the 2 servers took a Stats call: 1 refused it (UNAUTHENTICATED: invalid auth "
        "token), the others did not answer",
    )
