"""``requests_admitted_total`` ("generations started") counts a request once its generation
starts: one that gets a worker as the endpoint is stopping (the second signal's
``cancel_all``) is answered 503 and counted in no outcome, so it is not admitted either.
It was, and ``requests_admitted_total`` stayed above the outcomes' sum for good (an
endpoint review)."""

from __future__ import annotations

import urllib.request
from typing import Any

from edgespec.config import from_dict
from edgespec.runtime.edge.config import DrafterConfig
from edgespec.runtime.openai_api.app import ApiConfig, build_app
from edgespec.runtime.openai_api.edge_setup import EdgeSetup
from edgespec.runtime.openai_api.in_flight import InFlight
from edgespec.runtime.openai_api.serve import ApiThread
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.openai_api.conftest import LIMITS, MODEL, _error, word_tokenizer


def _counts(api: ApiThread) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{api.port}/metrics") as page:
        text = page.read().decode()
    admitted, finished = "edgespec_openai_requests_admitted_total", "requests_finished_total"
    lines = [line.split() for line in text.splitlines() if not line.startswith("#")]
    return {"admitted": sum(float(v) for k, v in lines if k == admitted),
            "finished": sum(float(v) for k, v in lines if finished in k)}  # fmt: skip


def test_a_request_turned_away_as_the_endpoint_stops_is_not_admitted(
    grpc_server: ServerThread, draft_model: Any
) -> None:
    address = f"127.0.0.1:{grpc_server.port}"
    config = from_dict(DrafterConfig, {"server": address, "draft": "tiny-draft"})
    setup = EdgeSetup(config, draft_model, word_tokenizer(64), 64, 24,
                      (RemoteVerifier(address, timeout_s=10.0),))  # fmt: skip
    in_flight = InFlight()
    api = ApiThread(build_app(setup, ApiConfig(MODEL, limits=LIMITS), in_flight),
                    "127.0.0.1").start()  # fmt: skip
    try:
        body = {"model": MODEL, "prompt": "w1 w2", "max_tokens": 3}
        assert _counts(api) == {"admitted": 0.0, "finished": 0.0}
        in_flight.cancel_all()  # as a second Ctrl-C does
        status, error = _error(api, body)
        assert (status, error["code"]) == (503, "endpoint_stopping")
        assert _counts(api) == {"admitted": 0.0, "finished": 0.0}  # was admitted 1
    finally:
        api.stop()
