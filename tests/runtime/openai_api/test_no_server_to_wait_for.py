"""A request that finds every verification server unreachable for longer than
``--retry-timeout-s`` (as the endpoint's own calls and probes saw them, probed again when
that word is old) is answered 503 at once, counted in the outage: waiting could not help
it. It waited the whole retry timeout (30 s by default) for the same 503, however long the
outage. A request at an outage's start still waits and rides out a restart. Real loopback
servers; the endpoint's clock (the watch's) is the test's, its retries real time."""

from __future__ import annotations

import datetime
import json
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.openai_api import outages
from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.conftest import start_server
from tests.runtime.openai_api.conftest import MODEL, _post, free_port
from tests.runtime.openai_api.test_outage_log import END, START, _logged
from tests.runtime.openai_api.test_server_health import (
    BODY,
    WALL_S,
    Clock,
    _endpoint,
    get,
    until_ready,
)

RETRY_TIMEOUT_S = 20.0
"""The endpoint's retry timeout here: a request that waits it out shows."""
ONE_S = (
    "the verification server is unreachable: it has not answered for 21.0 s, longer than "
    "--retry-timeout-s (20 s): the request did not wait (see /health); retry after 1s"
)


def _timed_post(api: Any, body: bytes = BODY) -> tuple[int, dict[str, Any], Any, float]:
    start = time.monotonic()
    status, reply, headers = _post(api, "/v1/completions", body)
    return status, reply, headers, time.monotonic() - start


def _down_at_110(
    target: TransformersTarget, draft_model: Any, clock: Clock
) -> tuple[Any, int, ServerThread]:
    """An endpoint whose one server answered at 100 and was found unreachable at 110."""
    port = free_port()
    server = start_server(target, host="127.0.0.1", port=port)
    api, _ = _endpoint([f"127.0.0.1:{port}"], draft_model, clock,
                       retry_timeout_s=RETRY_TIMEOUT_S)  # fmt: skip
    assert get(api)[0] == 200
    server.stop(grace_s=0)
    clock.now_s = 110.0
    assert get(api)[0] == 503  # a probe: unreachable since 110
    return api, port, server


@pytest.mark.parametrize("stream", [False, True])
def test_a_server_down_longer_than_the_retry_timeout_is_a_503_at_once(
    target: TransformersTarget, draft_model: Any, caplog: pytest.LogCaptureFixture, stream: bool
) -> None:
    clock = Clock()
    api, port, server = _down_at_110(target, draft_model, clock)
    body = json.dumps({"model": MODEL, "prompt": "w5 w6", "max_tokens": 4,
                       "stream": stream}).encode()  # fmt: skip
    try:
        clock.now_s = 131.0  # 21 s down; what the probe told is old: probed again first
        with caplog.at_level(logging.WARNING, logger=outages.__name__):
            replies = [_timed_post(api, body) for _ in range(2)]
            server = start_server(target, host="127.0.0.1", port=port)
            (seen,) = until_ready(api, clock)["servers"]
    finally:
        api.stop()
        server.stop(grace_s=0)
    for status, reply, headers, took_s in replies:
        assert (status, headers["Retry-After"]) == (503, "1")
        assert reply == {"error": {"message": ONE_S, "type": "server_error", "param": None,
                                   "code": "unavailable"}}  # fmt: skip
        assert took_s < 2.0  # was RETRY_TIMEOUT_S
    since = datetime.datetime.fromisoformat(seen["since"].replace("Z", "+00:00"))
    back_s = since.timestamp() - WALL_S  # the endpoint's clock when the server answered
    assert _logged(caplog) == [
        START.format(message=ONE_S, down_s="21.0"),
        END.format(address=f"127.0.0.1:{port}", down_s=f"{back_s - 110:.1f}", num="2 requests"),
    ]


def test_none_of_several_servers_answering_names_them_all(draft_model: Any) -> None:
    addresses = [f"127.0.0.1:{free_port()}" for _ in "ab"]
    clock = Clock()
    api, _ = _endpoint(addresses, draft_model, clock, retry_timeout_s=RETRY_TIMEOUT_S)
    try:
        assert get(api)[0] == 503  # probes: both unreachable since 100
        clock.now_s = 125.5
        status, reply, _, took_s = _timed_post(api)
    finally:
        api.stop()
    assert (status, reply["error"]["message"], took_s < 2.0) == (
        503, "the verification server is unreachable: none of the 2 servers has answered for "
        "25.5 s, longer than --retry-timeout-s (20 s): the request did not wait (see /health); "
        "retry after 1s", True,
    )  # fmt: skip


@pytest.mark.parametrize("mode", ["distributed", "centralized"])
def test_a_request_at_an_outages_start_still_waits_for_the_restart(
    target: TransformersTarget, draft_model: Any, mode: str
) -> None:
    """A centralized request's ``Generate`` is asked again until the server answers, as a
    distributed one's first open is."""
    clock = Clock()
    api, port, server = _down_at_110(target, draft_model, clock)
    body = json.dumps({"model": MODEL, "prompt": "w5 w6", "max_tokens": 4,
                       "edgespec": {"mode": mode}}).encode()  # fmt: skip
    try:
        clock.now_s = 125.0  # 15 s down: a restart may bring it back within the 20 s
        with ThreadPoolExecutor(1) as pool:
            reply = pool.submit(_timed_post, api, body)
            time.sleep(1.0)
            assert not reply.done(), reply.result()
            server = start_server(target, host="127.0.0.1", port=port)
            status, answer, _, _ = reply.result(timeout=RETRY_TIMEOUT_S + 10)
    finally:
        api.stop()
        server.stop(grace_s=0)
    assert status == 200, answer


def test_a_server_back_unnoticed_is_probed_and_serves_the_request(
    target: TransformersTarget, draft_model: Any
) -> None:
    """What the endpoint knew was 90 s old: the request is not refused on it (with no
    probe, every request would be refused and none would find the server back)."""
    clock = Clock()
    api, port, server = _down_at_110(target, draft_model, clock)
    try:
        server = start_server(target, host="127.0.0.1", port=port)
        clock.now_s = 200.0
        deadline = time.monotonic() + 30  # gRPC reconnects after a backoff of its own
        while (status := _timed_post(api)[0]) == 503 and time.monotonic() < deadline:
            clock.now_s += 5.0  # each 503 a probe that has not seen it back yet
    finally:
        api.stop()
        server.stop(grace_s=0)
    assert status == 200


def test_a_client_retrying_after_its_503_is_served_by_a_restarted_server(
    target: TransformersTarget, draft_model: Any
) -> None:
    """A 503's ``Retry-After`` is 1 s: a request within it of the probe that refused the last
    one is refused on that word, one after it is judged on a new probe. Once a request was
    refused, a server restarted 1.5 s later was refused on that probe for 5 s more."""
    clock = Clock()
    port = free_port()
    server = start_server(target, host="127.0.0.1", port=port)
    api, (client,) = _endpoint([f"127.0.0.1:{port}"], draft_model, clock,
                               retry_timeout_s=RETRY_TIMEOUT_S)  # fmt: skip
    try:
        server.stop(grace_s=0)
        clock.now_s = 110.0
        assert get(api)[0] == 503  # a probe: unreachable since 110
        clock.now_s = 131.0
        refused = _timed_post(api)[0]  # probed at 131: still down
        clock.now_s = 131.9  # within Retry-After of that probe: refused on it, no new probe
        num_stats = client.num_stats
        again = _timed_post(api)[0]
        probed = client.num_stats - num_stats
        server = start_server(target, host="127.0.0.1", port=port)
        time.sleep(1.5)  # the endpoint's channel reconnects within its 1 s backoff
        clock.now_s = 132.5  # a retry after Retry-After: probed afresh, the server back
        status, reply, _, _ = _timed_post(api)
    finally:
        api.stop()
        server.stop(grace_s=0)
    assert (refused, again, probed) == (503, 503, 0)
    assert status == 200, reply
