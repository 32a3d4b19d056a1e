"""Over several verification servers a request that arrives while none of them answers
waits as it does over one (:mod:`.test_unreachable_at_open`): routing (every server's
``Stats``) is asked again every backoff for up to ``retry_timeout_s``, the request going to
the first server back; past the timeout it is the single server's 503 in the same words,
and a client that leaves meanwhile frees its worker within one backoff. It was a 503 at
once: routing raised before the first open's retries began. Real loopback servers, two
ports that nothing listens on until one is started."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from edgespec.config import from_dict
from edgespec.policies.registry import build_policy
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.edge.config import DrafterConfig
from edgespec.runtime.openai_api.app import ApiConfig, build_app
from edgespec.runtime.openai_api.edge_setup import EdgeSetup
from edgespec.runtime.openai_api.serve import ApiThread
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.conftest import start_server
from tests.runtime.openai_api.conftest import LIMITS, MODEL, _post, free_port, word_tokenizer
from tests.runtime.openai_api.test_leaving_unreachable import (
    _running,
    assert_leaving_frees_its_worker,
)

TOKENIZER = word_tokenizer(64)
DOWN_S = 1.0
"""How long both servers are down after the request arrives."""


def _endpoint(ports: tuple[int, int], draft_model: Any, retry_timeout_s: float) -> ApiThread:
    """The endpoint on loopback over the servers at ``ports``, routed by ``jsq``."""
    addresses = [f"127.0.0.1:{port}" for port in ports]
    config = from_dict(DrafterConfig, {"server": ",".join(addresses), "draft": "tiny-draft",
                                       "retry_timeout_s": retry_timeout_s})  # fmt: skip
    verifiers = tuple(RemoteVerifier(address, timeout_s=5.0) for address in addresses)
    routing = build_policy("routing", config.routing.name, config.routing.params)
    setup = EdgeSetup(config, draft_model, TOKENIZER, 64, 24, verifiers, routing)
    return ApiThread(build_app(setup, ApiConfig(MODEL, limits=LIMITS)), "127.0.0.1").start()


def test_a_request_waits_for_one_of_the_servers_to_come_back(
    target: TransformersTarget, draft_model: Any
) -> None:
    ports = (free_port(), free_port())
    retry_timeout_s = 20.0
    api = _endpoint(ports, draft_model, retry_timeout_s)
    server = None
    body = json.dumps({"model": MODEL, "prompt": "w1 w2", "max_tokens": 8}).encode()
    try:
        with ThreadPoolExecutor(1) as pool:
            reply = pool.submit(_post, api, "/v1/completions", body)
            time.sleep(DOWN_S)
            assert not reply.done(), reply.result()  # was a 503 at once
            assert _running(api) == 1  # in a worker, asking the servers' Stats again
            server = start_server(target, host="127.0.0.1", port=ports[1])
            status, answer, _ = reply.result(timeout=retry_timeout_s + 10)
    finally:
        api.stop()
        if server is not None:
            server.stop(grace_s=0)
    assert status == 200, answer
    expected = TOKENIZER.decode(list(target_greedy_decode(target, (1, 2), 8)))
    assert answer["choices"][0]["text"] == expected


@pytest.mark.parametrize("stream", [False, True])
def test_no_server_for_the_retry_timeout_is_the_single_servers_503(
    draft_model: Any, stream: bool
) -> None:
    retry_timeout_s = 1.0
    api = _endpoint((free_port(), free_port()), draft_model, retry_timeout_s)
    body = {"model": MODEL, "prompt": "w1", "max_tokens": 4, "stream": stream}
    start = time.monotonic()
    try:
        status, reply, headers = _post(api, "/v1/completions", json.dumps(body).encode())
    finally:
        api.stop()
    took = time.monotonic() - start
    assert (status, headers["Retry-After"]) == (503, "1")
    assert reply["error"] == {
        "message": "the verification server is unreachable: none of the 2 servers answered "
        "a Stats call; retry after 1s",
        "type": "server_error",
        "param": None,
        "code": "unavailable",
    }
    assert retry_timeout_s <= took < retry_timeout_s + 5  # was about 0: at once


@pytest.mark.parametrize("stream", [False, True])
def test_a_request_left_while_no_server_answers_frees_its_worker(
    draft_model: Any, stream: bool
) -> None:
    """Within one backoff of being taken for gone, not after the retry timeout (20 s)."""
    api = _endpoint((free_port(), free_port()), draft_model, retry_timeout_s=20.0)
    try:
        assert_leaving_frees_its_worker(api, max_tokens=4, stream=stream)  # was the 503
    finally:
        api.stop()
