"""``/health`` and ``/ready`` say what the endpoint last saw of its verification servers.
``/health`` said ``{"status": "ok"}`` while the server was down or refused the endpoint's
token (every request then waited ``--retry-timeout-s`` for its 503, or got a 502), and no
route said whether the endpoint could serve: a load balancer kept sending it requests.
Real loopback servers; the endpoint's clocks are the test's."""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from edgespec.config import from_dict
from edgespec.policies.registry import build_policy
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.edge.config import DrafterConfig
from edgespec.runtime.messages import ServerStats
from edgespec.runtime.openai_api.app import ApiConfig, build_app
from edgespec.runtime.openai_api.edge_setup import EdgeSetup
from edgespec.runtime.openai_api.health import PROBE_INTERVAL_S, PROBE_TIMEOUT_S
from edgespec.runtime.openai_api.serve import ApiThread
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from tests.runtime.conftest import start_server
from tests.runtime.openai_api.conftest import LIMITS, MODEL, _post, free_port, word_tokenizer

WALL_S = 1_796_000_000.0
"""The endpoint's wall clock when its clock reads 0 (2026-11-30T00:53:20Z)."""
AT_100, AT_105 = "2026-11-30T00:55:00Z", "2026-11-30T00:55:05Z"
"""The wall clock, to the second, when the endpoint's clock reads 100 and 105."""
BODY = json.dumps({"model": MODEL, "prompt": "w5 w6", "max_tokens": 4}).encode()
REFUSED_TOKEN = "UNAUTHENTICATED: invalid auth token"


class Clock:
    """The endpoint's clock (seconds), set by the test; its wall clock follows it."""

    def __init__(self) -> None:
        self.now_s = 100.0

    def __call__(self) -> float:
        return self.now_s

    def wall(self) -> float:
        return WALL_S + self.now_s


class Counting(RemoteVerifier):
    """A server's client that counts its ``Stats`` calls (a probe is one)."""

    def __init__(self, address: str, auth_token: str | None) -> None:
        super().__init__(address, auth_token=auth_token, timeout_s=5.0)
        self.num_stats = 0

    def stats(self, timeout_s: float | None = None) -> ServerStats:
        self.num_stats += 1
        return super().stats(timeout_s)


def _endpoint(
    addresses: list[str], draft_model: Any, clock: Clock, token: str | None = None,
    answered: tuple[str, ...] = (), **settings: Any,
) -> tuple[ApiThread, tuple[Counting, ...]]:  # fmt: skip
    config = from_dict(DrafterConfig, {"server": ",".join(addresses), "draft": "tiny-draft",
                                       **settings})  # fmt: skip
    clients = tuple(Counting(address, token) for address in addresses)
    routing = build_policy("routing", config.routing.name, config.routing.params)
    setup = EdgeSetup(config, draft_model, word_tokenizer(64), 64, 24, clients,
                      routing if len(clients) > 1 else None,
                      answered_at_start=frozenset(answered))  # fmt: skip
    app = build_app(setup, ApiConfig(MODEL, limits=LIMITS), clock=clock, wall_clock=clock.wall)
    return ApiThread(app, "127.0.0.1").start(), clients


def get(api: ApiThread, path: str = "/ready") -> tuple[int, dict[str, Any]]:
    """GET ``path``: the status and the JSON body."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{api.port}{path}", timeout=30) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def entry(address: str, state: str, since: str, checked: str | None,
          error: str | None = None) -> dict[str, Any]:  # fmt: skip
    return {"address": address, "state": state, "since": since, "checked": checked,
            "error": error}  # fmt: skip


def health(*servers: dict[str, Any]) -> dict[str, Any]:
    ready = any(server["state"] == "reachable" for server in servers)
    return {"status": "ok" if ready else "no_server_reachable", "ready": ready, "running": 0,
            "queued": 0, "servers": list(servers)}  # fmt: skip


def until_ready(api: ApiThread, clock: Clock, timeout_s: float = 60.0) -> dict[str, Any]:
    """``/ready``'s body once it is 200, the clock moved a probe interval before each ask
    (gRPC reconnects to a restarted server after a backoff of its own)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        clock.now_s += PROBE_INTERVAL_S
        status, body = get(api)
        if status == 200:
            return body
        time.sleep(0.2)
    raise AssertionError(f"not ready within {timeout_s} s: {body}")


def test_ready_follows_the_server_down_and_back(
    target: TransformersTarget, draft_model: Any
) -> None:
    port = free_port()
    address = f"127.0.0.1:{port}"
    server = start_server(target, host="127.0.0.1", port=port)
    clock = Clock()
    api, (client,) = _endpoint([address], draft_model, clock)
    try:
        assert get(api) == (200, health(entry(address, "reachable", AT_100, AT_100)))
        server.stop(grace_s=0)
        clock.now_s = 105.0  # what the last probe told is an interval old: probed again
        status, body = get(api)
        (seen,) = body["servers"]
        assert (status, body) == (503, health(entry(address, "unreachable", AT_105, AT_105,
                                                    seen["error"])))  # fmt: skip
        assert seen["error"].startswith("UNAVAILABLE: ")
        assert get(api, "/health") == (200, body)  # alive all the same: the same body
        assert client.num_stats == 2  # one probe per interval, however many checks
        server = start_server(target, host="127.0.0.1", port=port)
        (seen,) = until_ready(api, clock)["servers"]
        assert (seen["state"], seen["error"]) == ("reachable", None)
    finally:
        api.stop()
        server.stop(grace_s=0)


def test_servers_that_answered_the_start_are_reachable_without_a_probe(
    target: TransformersTarget, draft_model: Any
) -> None:
    """The endpoint asked each server's Health (and checked its token) as it started: its
    first /ready said no_server_reachable (503) until a probe landed, a readiness probe of
    a loaded machine failing right after a good start."""
    server = start_server(target, host="127.0.0.1")
    address = f"127.0.0.1:{server.port}"
    clock = Clock()
    api, (client,) = _endpoint([address], draft_model, clock, answered=(address,))
    try:
        assert get(api) == (200, health(entry(address, "reachable", AT_100, AT_100)))
        assert client.num_stats == 0
    finally:
        api.stop()
        server.stop(grace_s=0)


def test_a_refused_token_shows_from_the_requests_own_call(
    target: TransformersTarget, draft_model: Any
) -> None:
    server = start_server(target, host="127.0.0.1", auth_tokens=["tok-now"])
    address = f"127.0.0.1:{server.port}"
    clock = Clock()
    api, (client,) = _endpoint([address], draft_model, clock, token="tok-revoked")
    try:
        assert _post(api, "/v1/completions", BODY)[0] == 502
        refusing = entry(address, "refusing_token", AT_100, AT_100, REFUSED_TOKEN)
        assert get(api) == (503, health(refusing))
        assert client.num_stats == 0  # the request's open told it: nothing probed
        clock.now_s = 105.0
        refusing["checked"] = AT_105
        assert get(api, "/health") == (200, health(refusing))
        assert client.num_stats == 1  # a probe (Stats is authenticated) says the same
    finally:
        api.stop()
        server.stop(grace_s=0)


def _timed_ready(api: ApiThread) -> tuple[int, float]:
    start = time.monotonic()
    status, _ = get(api)
    return status, time.monotonic() - start


def test_probes_never_pile_up_nor_hold_a_check_for_their_deadline(draft_model: Any) -> None:
    """A server that takes connections and never answers: 64 checks, 32 at a time, start
    one probe, and each answers within the wait (0.5 s), not the probe's deadline (2 s)."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        clock = Clock()
        api, (client,) = _endpoint([address], draft_model, clock)
        try:
            with ThreadPoolExecutor(32) as pool:
                answers = list(pool.map(lambda _: _timed_ready(api), range(64)))
            assert {status for status, _ in answers} == {503}  # unknown yet: not ready
            assert max(took_s for _, took_s in answers) < PROBE_TIMEOUT_S
            assert client.num_stats == 1
            time.sleep(PROBE_TIMEOUT_S + 0.5)  # the probe's deadline passed
            assert get(api) == (503, health(entry(address, "unreachable", AT_100, AT_100,
                                                  "UNAVAILABLE: Deadline Exceeded")))  # fmt: skip
            assert client.num_stats == 1
        finally:
            api.stop()


def test_servers_that_all_refuse_the_token_are_a_502_at_once(
    target: TransformersTarget, draft_model: Any
) -> None:
    """Routing took them for unreachable: each request waited --retry-timeout-s (20 s here)
    and was a 503 saying none of them answered."""
    servers = [start_server(target, host="127.0.0.1", auth_tokens=["tok-now"]) for _ in "ab"]
    addresses = [f"127.0.0.1:{server.port}" for server in servers]
    api, _ = _endpoint(addresses, draft_model, Clock(), token="tok-revoked",
                       retry_timeout_s=20.0)  # fmt: skip
    try:
        start = time.monotonic()
        status, reply, _ = _post(api, "/v1/completions", BODY)
        took_s = time.monotonic() - start
        refusing = [entry(address, "refusing_token", AT_100, AT_100, REFUSED_TOKEN)
                    for address in addresses]  # fmt: skip
        assert get(api) == (503, health(*refusing))
    finally:
        api.stop()
        for server in servers:
            server.stop(grace_s=0)
    assert (status, reply["error"]["code"], reply["error"]["message"]) == (
        502, "unauthenticated", "the verification server refused the request (UNAUTHENTICATED): "
        "none of the 2 servers took a Stats call: invalid auth token",
    )  # fmt: skip
    assert took_s < 5.0
