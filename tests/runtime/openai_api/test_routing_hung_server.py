"""Over several verification servers, some hung (:mod:`tests.runtime.hung_server`: it takes
calls and answers none). Routing asks every server's ``Stats`` at once, each answer waited
for at most ``MIN_ATTEMPT_S`` (1 s), so a request goes to the server that answers, and with
every server hung its 503 comes once ``--retry-timeout-s`` passed. It waited
``--request-timeout-s`` on each hung server's ``Stats`` in turn, every request, every
routing round: 8 s before a request reached the live server, 16 s a round over two hung
ones, and a client that left meanwhile held its worker that long. A server told unreachable
within ``PROBE_INTERVAL_S`` is then not asked (``ServerWatch.known_down``): every request
paid the hung one's 1 s."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from edgespec.config import from_dict
from edgespec.policies.registry import build_policy
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.edge.config import DrafterConfig
from edgespec.runtime.edge.reconnect import MIN_ATTEMPT_S
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.openai_api.admission import Concurrency
from edgespec.runtime.openai_api.app import ApiConfig, build_app
from edgespec.runtime.openai_api.edge_setup import EdgeSetup
from edgespec.runtime.openai_api.health import PROBE_INTERVAL_S
from edgespec.runtime.openai_api.serve import ApiThread
from edgespec.runtime.openai_api.server_watch import ServerWatch
from edgespec.runtime.wire.drafter_clients import drafter_clients
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.conftest import start_server
from tests.runtime.hung_server import hung_server
from tests.runtime.openai_api.conftest import LIMITS, MODEL, _post, word_tokenizer
from tests.runtime.openai_api.test_leaving_unreachable import assert_leaving_frees_its_worker

TOKENIZER = word_tokenizer(64)
REQUEST_TIMEOUT_S = 8.0
SLACK_S = 1.5
"""Time a request takes besides waiting for the servers (8 tokens), on a loaded machine."""


@contextmanager
def _endpoint(
    addresses: list[str], draft_model: Any, retry_timeout_s: float
) -> Iterator[ApiThread]:
    """The endpoint (one worker, no queue) over the servers at ``addresses`` in that order,
    routed by ``jsq``, its clients made as ``edgespec draft`` makes them."""
    config = from_dict(DrafterConfig, {"server": ",".join(addresses), "draft": "tiny-draft",
                                       "retry_timeout_s": retry_timeout_s,
                                       "request_timeout_s": REQUEST_TIMEOUT_S})  # fmt: skip
    routing = build_policy("routing", config.routing.name, config.routing.params)
    setup = EdgeSetup(config, draft_model, TOKENIZER, 64, 24, drafter_clients(config), routing)
    one = ApiConfig(MODEL, limits=LIMITS, concurrency=Concurrency(1, 0))
    api = ApiThread(build_app(setup, one), "127.0.0.1").start()
    try:
        yield api
    finally:
        api.stop()


def _completion(api: ApiThread) -> tuple[int, dict[str, Any], float]:
    """A completion of 8 tokens: its status, its body, the seconds it took."""
    body = json.dumps({"model": MODEL, "prompt": "w1 w2", "max_tokens": 8}).encode()
    start = time.monotonic()
    status, reply, _ = _post(api, "/v1/completions", body)
    return status, reply, time.monotonic() - start


def test_a_request_goes_to_the_server_that_answers_past_a_hung_one(
    target: TransformersTarget, draft_model: Any
) -> None:
    server = start_server(target, host="127.0.0.1")
    try:
        with hung_server() as (hung, calls):
            addresses = [hung, f"127.0.0.1:{server.port}"]  # the hung one asked first
            with _endpoint(addresses, draft_model, retry_timeout_s=REQUEST_TIMEOUT_S) as api:
                status, reply, took_s = _completion(api)
    finally:
        server.stop(grace_s=0)
    assert status == 200, reply
    assert reply["choices"][0]["text"] == TOKENIZER.decode(
        list(target_greedy_decode(target, (1, 2), 8))
    )
    assert took_s < MIN_ATTEMPT_S + SLACK_S  # was over 8 s: the hung one's Stats waited out
    assert calls == ["Stats"]  # left out of the decision: nothing opened on it


def test_a_server_known_down_is_not_asked_by_the_next_request(
    target: TransformersTarget, draft_model: Any
) -> None:
    """The first request's routing waits the hung server's 1 s and so learns it is down;
    the next one, within ``PROBE_INTERVAL_S``, routes without asking it."""
    server = start_server(target, host="127.0.0.1")
    try:
        with hung_server() as (hung, calls):
            addresses = [hung, f"127.0.0.1:{server.port}"]  # the hung one asked first
            with _endpoint(addresses, draft_model, retry_timeout_s=REQUEST_TIMEOUT_S) as api:
                first, second = _completion(api), _completion(api)
    finally:
        server.stop(grace_s=0)
    text = TOKENIZER.decode(list(target_greedy_decode(target, (1, 2), 8)))
    for status, reply, _ in (first, second):
        assert (status, reply["choices"][0]["text"]) == (200, text), reply
    assert first[2] >= MIN_ATTEMPT_S  # its routing waited for the hung server
    assert second[2] < MIN_ATTEMPT_S  # was over 1 s: the hung server's Stats waited for
    assert calls == ["Stats"]  # asked once, by the first request's routing


def test_known_down_is_what_was_told_unreachable_lately() -> None:
    now_s = [100.0]
    watch = ServerWatch(("a:1", "b:2", "c:3"), lambda: now_s[0], lambda: 0.0)
    assert watch.known_down(PROBE_INTERVAL_S) == frozenset()  # unknown: not known down
    watch.tell(0, RequestError(ErrorCode.UNAVAILABLE, "down"))
    watch.tell(1, RequestError(ErrorCode.UNAUTHENTICATED, "token"))  # refusing, not down
    now_s[0] = 100.0 + PROBE_INTERVAL_S - 0.01
    assert watch.known_down(PROBE_INTERVAL_S) == frozenset({0})
    watch.tell(0, RequestError(ErrorCode.CANCELLED, "ours"))  # says nothing of the server
    assert watch.known_down(PROBE_INTERVAL_S) == frozenset({0})
    now_s[0] = 100.0 + PROBE_INTERVAL_S  # told that long ago: it may be back, asked again
    assert watch.known_down(PROBE_INTERVAL_S) == frozenset()
    watch.tell(0, RequestError(ErrorCode.UNAVAILABLE, "down"))  # a probe: still down
    assert watch.known_down(PROBE_INTERVAL_S) == frozenset({0})
    watch.tell(0, None)  # a call or probe answered: admitted again at once
    assert watch.known_down(PROBE_INTERVAL_S) == frozenset()


@contextmanager
def _all_hung(draft_model: Any, retry_timeout_s: float) -> Iterator[tuple[ApiThread, list[Any]]]:
    """The endpoint over two hung servers; the calls each got."""
    with ExitStack() as stack:
        hung = [stack.enter_context(hung_server()) for _ in range(2)]
        api = stack.enter_context(_endpoint([a for a, _ in hung], draft_model, retry_timeout_s))
        yield api, [calls for _, calls in hung]


def test_every_server_hung_is_a_503_once_the_retry_window_passed(draft_model: Any) -> None:
    retry_timeout_s = 1.0
    with _all_hung(draft_model, retry_timeout_s) as (api, calls):
        status, reply, took_s = _completion(api)
    assert (status, reply["error"]["code"]) == (503, "unavailable")
    assert reply["error"]["message"] == (
        "the verification server is unreachable: none of the 2 servers answered a Stats call; "
        "retry after 1s"
    )
    # the last round starts within the window and waits at most MIN_ATTEMPT_S
    assert retry_timeout_s <= took_s < retry_timeout_s + MIN_ATTEMPT_S + SLACK_S  # was 16 s
    assert {call for one in calls for call in one} == {"Stats"}  # no open: none routed to


def test_a_client_that_leaves_while_every_server_is_hung_frees_its_worker(
    draft_model: Any,
) -> None:
    """Within one backoff of being taken for gone, not after a routing round's 16 s."""
    with _all_hung(draft_model, retry_timeout_s=20.0) as (api, _):
        assert_leaving_frees_its_worker(api, max_tokens=4)
