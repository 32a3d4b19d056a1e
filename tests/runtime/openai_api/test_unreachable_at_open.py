"""A request that arrives while the verification server is unreachable (restarting) waits
for it, as a request already running waits out the same outage: its first open is retried
every backoff for up to ``retry_timeout_s`` (``--retry-timeout-s``), and the request is
answered once the server is back, token for token the target's greedy decoding. It was a
503 at once. Past the timeout it is a 503 (:mod:`.test_transport_errors`); a client that
leaves while it waits frees its worker within one backoff of being taken for gone, as one
that leaves mid-session does (:mod:`.test_leaving_unreachable`)."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.conftest import start_server
from tests.runtime.openai_api.conftest import MODEL, _post, endpoint, free_port, word_tokenizer
from tests.runtime.openai_api.test_leaving_unreachable import (
    _running,
    assert_leaving_frees_its_worker,
)

RETRY_TIMEOUT_S = 20.0
"""The endpoints' retry timeout here: far longer than any wait below."""
DOWN_S = 1.0
"""How long the server is down after the request arrives."""
TOKENIZER = word_tokenizer(64)


def test_a_request_waits_for_a_server_that_comes_back(
    target: TransformersTarget, draft_model: Any
) -> None:
    port = free_port()
    api = endpoint(f"127.0.0.1:{port}", draft_model, TOKENIZER, retry_timeout_s=RETRY_TIMEOUT_S)
    server = None
    body = json.dumps({"model": MODEL, "prompt": "w1 w2", "max_tokens": 8}).encode()
    try:
        with ThreadPoolExecutor(1) as pool:
            reply = pool.submit(_post, api, "/v1/completions", body)
            time.sleep(DOWN_S)
            assert not reply.done(), reply.result()  # was a 503 at once
            assert _running(api) == 1  # in a worker, retrying its first open
            server = start_server(target, host="127.0.0.1", port=port)
            status, answer, _ = reply.result(timeout=RETRY_TIMEOUT_S + 10)
    finally:
        api.stop()
        if server is not None:
            server.stop(grace_s=0)
    assert status == 200, answer
    expected = TOKENIZER.decode(list(target_greedy_decode(target, (1, 2), 8)))
    assert answer["choices"][0]["text"] == expected
    assert answer["usage"]["completion_tokens"] == 8


@pytest.mark.parametrize("stream", [False, True])
def test_a_request_left_while_waiting_for_the_server_frees_its_worker(
    draft_model: Any, stream: bool
) -> None:
    """Not after the retry timeout (20 s here, 30 s by default): a stream too, whose first
    item was awaited without watching for the client."""
    address = f"127.0.0.1:{free_port()}"
    api = endpoint(address, draft_model, TOKENIZER, retry_timeout_s=RETRY_TIMEOUT_S)
    try:
        assert_leaving_frees_its_worker(api, max_tokens=4, stream=stream)  # was the 503
    finally:
        api.stop()
