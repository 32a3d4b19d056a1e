"""A verification server that takes connections and calls and answers none (stopped with
SIGSTOP, hung: :mod:`tests.runtime.hung_server`). A request's 503 comes once its open has
been retried for ``--retry-timeout-s``, plus the close of that open (at most
``CLOSE_TIMEOUT_S``): it took twice the request timeout, the open's and then its close's
(60 s at the defaults, 10.2 s with ``--retry-timeout-s 3 --request-timeout-s 5``). A client
that leaves meanwhile frees its worker at once, its open cut short and closed without
waiting: it held the worker for those two timeouts."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from edgespec.config import from_dict
from edgespec.runtime.edge.config import DrafterConfig
from edgespec.runtime.openai_api.admission import Concurrency
from edgespec.runtime.openai_api.app import ApiConfig, build_app
from edgespec.runtime.openai_api.edge_setup import EdgeSetup
from edgespec.runtime.openai_api.serve import ApiThread
from edgespec.runtime.wire.drafter_clients import CLOSE_TIMEOUT_S, drafter_clients
from tests.runtime.hung_server import hung_server
from tests.runtime.openai_api.conftest import LIMITS, MODEL, _post, word_tokenizer
from tests.runtime.openai_api.test_leaving_unreachable import assert_leaving_frees_its_worker

SLACK_S = 2.0  # a loaded 2-core machine; what it was, 8 s, stays well above
"""Time a request takes besides waiting for the server, on a loaded machine."""


@contextmanager
def _endpoint(
    draft_model: Any, opens: bool = False, **settings: float
) -> Iterator[tuple[ApiThread, list[str]]]:
    """The endpoint (one worker, no queue) over a hung server (``opens``: one that still
    opens sessions, then answers no verification), its clients made as ``edgespec draft``
    makes them; the calls the server got."""
    with hung_server(health_hangs=not opens, opens=opens) as (address, calls):
        config = from_dict(DrafterConfig, {"server": address, "draft": "tiny-draft", **settings})
        setup = EdgeSetup(config, draft_model, word_tokenizer(64), 64, 24, drafter_clients(config))
        one = ApiConfig(MODEL, limits=LIMITS, concurrency=Concurrency(1, 0))
        api = ApiThread(build_app(setup, one), "127.0.0.1").start()
        try:
            yield api, calls
        finally:
            api.stop()


def test_the_503_comes_after_the_retry_window_not_two_request_timeouts(draft_model: Any) -> None:
    retry_timeout_s = 1.0
    with _endpoint(draft_model, retry_timeout_s=retry_timeout_s, request_timeout_s=4.0) as (
        api,
        calls,
    ):
        body = json.dumps({"model": MODEL, "prompt": "w1 w2", "max_tokens": 4}).encode()
        start = time.monotonic()
        status, reply, headers = _post(api, "/v1/completions", body)
        took_s = time.monotonic() - start
    assert (status, reply["error"]["code"], headers["Retry-After"]) == (503, "unavailable", "1")
    assert reply["error"]["message"] == (
        "the verification server did not answer within --request-timeout-s (Deadline "
        "Exceeded): it is hung, or busy with a pass that takes longer, such as a long "
        "prompt's first (the endpoint's --request-timeout-s must exceed it); retry after 1s"
    )
    assert calls == ["OpenSession", "CloseSession"]  # the open closed: it may have opened
    assert took_s < retry_timeout_s + CLOSE_TIMEOUT_S + SLACK_S  # was 8 s: 4 + 4


def test_a_client_that_leaves_during_an_unanswered_open_frees_its_worker(
    draft_model: Any,
) -> None:
    """Within a backoff of being taken for gone, not after the open's 20 s and its close's
    20 s; the open it cut short is closed (the server may have opened the session)."""
    with _endpoint(draft_model, retry_timeout_s=20.0, request_timeout_s=20.0) as (api, calls):
        assert_leaving_frees_its_worker(api, max_tokens=4)
        # (its /metrics reads probe the server with Stats calls)
        assert [call for call in calls if call != "Stats"] == ["OpenSession", "CloseSession"]


def test_a_client_that_leaves_during_an_unanswered_verification_frees_its_worker(
    draft_model: Any,
) -> None:
    """A server that opened the session, then stalls (SIGSTOP, a hung pass): the worker is
    free within a backoff of the client being taken for gone, not after the verification's
    20 s request timeout (it held the worker, and the client's place under
    --openai-max-per-client, that long)."""
    with _endpoint(draft_model, True, retry_timeout_s=20.0, request_timeout_s=20.0) as (
        api,
        calls,
    ):
        assert_leaving_frees_its_worker(api, max_tokens=4)
        assert [call for call in calls if call != "Stats"][:2] == ["OpenSession", "Verify"]
