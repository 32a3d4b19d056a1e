"""A centralized request's ``Generate`` tells the endpoint's server watch what it found, as
a distributed request's calls do: with the one server down for longer than
``--retry-timeout-s``, the next centralized request is a 503 at once. Its calls told
nothing, so each waited the whole retry timeout (and ``/ready``, routing and the outage
log of a ``--mode centralized`` endpoint learnt of a server's state only from probes).
An endpoint review found it."""

from __future__ import annotations

import json
import time
from typing import Any

from edgespec.config import from_dict
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.edge.config import DrafterConfig
from edgespec.runtime.openai_api.app import ApiConfig, build_app
from edgespec.runtime.openai_api.edge_setup import EdgeSetup
from edgespec.runtime.openai_api.serve import ApiThread
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from tests.runtime.conftest import start_server
from tests.runtime.openai_api.conftest import LIMITS, MODEL, _post, word_tokenizer

RETRY_TIMEOUT_S = 1.0


def _completion(api: ApiThread, mode: str) -> tuple[int, float]:
    body = {"model": MODEL, "prompt": "w1 w2", "max_tokens": 4, "edgespec": {"mode": mode}}
    start = time.monotonic()
    status, _, _ = _post(api, "/v1/completions", json.dumps(body).encode())
    return status, time.monotonic() - start


def test_a_centralized_request_after_a_long_outage_is_a_503_at_once(
    target: TransformersTarget, draft_model: Any
) -> None:
    server = start_server(target, host="127.0.0.1")
    address = f"127.0.0.1:{server.port}"
    config = from_dict(DrafterConfig, {"server": address, "draft": "tiny-draft",
                                       "retry_timeout_s": RETRY_TIMEOUT_S})  # fmt: skip
    setup = EdgeSetup(config, draft_model, word_tokenizer(64), 64, 24,
                      (RemoteVerifier(address, timeout_s=5.0),))  # fmt: skip
    api = ApiThread(build_app(setup, ApiConfig(MODEL, limits=LIMITS)), "127.0.0.1").start()
    try:
        assert _completion(api, "centralized")[0] == 200
        server.stop(grace_s=0)
        status, took_s = _completion(api, "centralized")  # at the outage's start: waits
        assert status == 503 and took_s >= RETRY_TIMEOUT_S
        time.sleep(RETRY_TIMEOUT_S)  # down for longer than a request would wait
        status, took_s = _completion(api, "centralized")
        assert status == 503 and took_s < RETRY_TIMEOUT_S / 2  # was: the whole timeout again
    finally:
        api.stop()
        server.stop(grace_s=0)
