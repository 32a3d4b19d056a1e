"""Routing across real loopback servers with the simulator's routing policies."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import numpy as np
import pytest

from edgespec.cli import main
from edgespec.core.types import SamplingParams, ServerLoad
from edgespec.policies.contracts import PolicyContractError
from edgespec.policies.routing import (
    JoinShortestQueueRouting,
    RandomRouting,
    RoundRobinRouting,
)
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.edge.routing import route
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.inprocess import target_greedy_decode
from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.conftest import start_server

PROMPT = (5, 6, 7, 8, 9)


@pytest.fixture
def two_servers(target: TransformersTarget) -> Iterator[list[ServerThread]]:
    servers = [start_server(target), start_server(target)]
    yield servers
    for server in servers:
        server.stop(grace_s=0)


def _verifiers(servers: list[ServerThread]) -> list[RemoteVerifier]:
    return [RemoteVerifier(f"127.0.0.1:{s.port}") for s in servers]


def _dead_address() -> str:
    with socket.socket() as sock:  # a port nothing listens on once the socket closes
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


def test_policies_see_live_loads(two_servers: list[ServerThread]) -> None:
    verifiers = _verifiers(two_servers)
    for i in range(2):  # server 0 holds two sessions
        verifiers[0].open(SessionSpec(f"busy{i}", "c", PROMPT, SamplingParams(max_new_tokens=4)))
    rng = np.random.default_rng(0)
    choice = route(verifiers, JoinShortestQueueRouting(), rng)
    assert choice.loads == (ServerLoad(0, 0, 2, False), ServerLoad(1, 0, 0, False))
    assert choice.server_index == 1 and choice.unreachable == ()
    robin = RoundRobinRouting()
    assert [route(verifiers, robin, rng).server_index for _ in range(3)] == [0, 1, 0]
    picks = [route(verifiers, RandomRouting(), np.random.default_rng(7)).server_index]
    assert picks == [RandomRouting().route(list(choice.loads), np.random.default_rng(7))]


def test_a_dead_server_is_left_out_and_a_bad_answer_is_refused(
    two_servers: list[ServerThread],
) -> None:
    dead = RemoteVerifier(_dead_address(), timeout_s=2)
    verifiers = [dead, *_verifiers(two_servers)]
    choice = route(verifiers, JoinShortestQueueRouting(), np.random.default_rng(0))
    assert choice.unreachable == (0,) and choice.server_index in (1, 2)
    with pytest.raises(RequestError) as info:
        route([dead], JoinShortestQueueRouting(), np.random.default_rng(0))
    assert (info.value.code, info.value.message) == (
        ErrorCode.UNAVAILABLE,
        "none of the 1 servers answered a Stats call",
    )

    class Elsewhere:
        def route(self, loads: object, rng: object) -> int:
            return 9

    with pytest.raises(PolicyContractError, match="routing policy Elsewhere returned server 9"):
        route(verifiers, Elsewhere(), np.random.default_rng(0))


def test_draft_command_routes_across_servers(
    two_servers: list[ServerThread],
    target: TransformersTarget,
    capsys: pytest.CaptureFixture[str],
) -> None:
    a, b = (f"127.0.0.1:{s.port}" for s in two_servers)
    RemoteVerifier(a).open(SessionSpec("held", "c", PROMPT, SamplingParams(max_new_tokens=4)))
    ids = ",".join(map(str, PROMPT))
    args = ["draft", "--server", a, "--server", b, "--draft", "ngram", "--prompt-ids", ids]
    assert main([*args, "--routing", "jsq", "--max-new-tokens", "10"]) == 0
    out, err = capsys.readouterr()
    assert f"jsq routed to {b} (queue 0, sessions 0)" in err
    reference = list(target_greedy_decode(target, PROMPT, 10))
    assert (
        out.splitlines()[0].strip() == " ".join(str(t) for t in reference)
        or str(reference[0]) in out
    )
    assert main([*args, "--routing", "nearest"]) == 2
    assert "unknown routing policy 'nearest'" in capsys.readouterr().err
