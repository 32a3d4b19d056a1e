"""An endpoint whose token the server no longer takes (revoked after it started): every
request is a 502 its client cannot fix, and nothing was logged. The device's log says so,
one line per kind of refusal at most every 10 s, the next line counting those not logged.
A stream whose server refused the token after its 200 was logged "answered a request 502"
though its client got the 200 and an error event: its line says what its client got."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from edgespec.config import from_dict
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.edge.config import DrafterConfig
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.openai_api import throttle
from edgespec.runtime.openai_api.app import ApiConfig, build_app
from edgespec.runtime.openai_api.edge_setup import EdgeSetup
from edgespec.runtime.openai_api.errors import from_request_error
from edgespec.runtime.openai_api.serve import ApiThread
from edgespec.runtime.openai_api.throttle import RefusedCredentials
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from tests.runtime.conftest import start_server
from tests.runtime.openai_api.conftest import LIMITS, MODEL, _post, word_tokenizer
from tests.runtime.openai_api.test_outage_log import LostAfterARound, stream_after_a_round

REFUSED = "the verification server refused the request (UNAUTHENTICATED): invalid auth token"
LINE = (f"the OpenAI-compatible endpoint answered a request 502: {REFUSED}; its clients cannot "
        "fix this: restart the endpoint with an --auth-token the server takes")  # fmt: skip
ENDED = "ended a stream (answered 200 already) with an unauthenticated error"
REVOKED = RequestError(ErrorCode.UNAUTHENTICATED, "invalid auth token")


@pytest.fixture
def revoked(
    target: TransformersTarget, draft_model: Any
) -> Iterator[tuple[ApiThread, list[float]]]:
    """An endpoint whose token the server does not take, and its log clock."""
    server = start_server(target, host="127.0.0.1", auth_tokens=["tok-now"])
    address = f"127.0.0.1:{server.port}"
    now = [100.0]
    config = from_dict(DrafterConfig, {"server": address, "draft": "tiny-draft"})
    verifier = RemoteVerifier(address, auth_token="tok-revoked", timeout_s=5.0)
    setup = EdgeSetup(config, draft_model, word_tokenizer(64), 64, 24, (verifier,),
                      refusals=RefusedCredentials(clock=lambda: now[0]))  # fmt: skip
    api = ApiThread(build_app(setup, ApiConfig(MODEL, limits=LIMITS)), "127.0.0.1").start()
    yield api, now
    api.stop()
    server.stop(grace_s=0)


def _refused(api: ApiThread) -> None:
    body = json.dumps({"model": MODEL, "prompt": "w5 w6", "max_tokens": 4}).encode()
    status, reply, _ = _post(api, "/v1/completions", body)
    assert (status, reply["error"]["message"], reply["error"]["code"]) == (
        502, REFUSED, "unauthenticated",
    )  # fmt: skip


def test_a_refused_token_is_logged_once_per_interval(
    revoked: tuple[ApiThread, list[float]], caplog: pytest.LogCaptureFixture
) -> None:
    api, now = revoked
    with caplog.at_level(logging.WARNING, logger=throttle.__name__):
        for _ in range(3):
            _refused(api)
        now[0] = 109.9  # within the interval: counted, not logged
        _refused(api)
        now[0] = 110.0
        _refused(api)
    told = [r.getMessage() for r in caplog.records if r.name == throttle.__name__]
    assert told == [LINE, f"{LINE}; 3 more since the last such line, not logged"]


def test_a_stream_refused_after_its_200_is_logged_as_what_its_client_got(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [100.0]
    refusals = RefusedCredentials(clock=lambda: now[0])
    error = from_request_error(REVOKED)
    with caplog.at_level(logging.WARNING, logger=throttle.__name__):
        refusals.note(error, streamed=True)
        refusals.note(error)  # one kind: counted in the next line
        now[0] = 110.0
        refusals.note(error)
    told = [r.getMessage() for r in caplog.records if r.name == throttle.__name__]
    assert told == [
        LINE.replace("answered a request 502", ENDED),
        f"{LINE}; 1 more since the last such line, not logged",
    ]


class RevokedAfterARound(LostAfterARound):
    """A server's client whose token the server refuses once it has verified one round."""

    def _check(self) -> None:
        if self.lost:
            raise REVOKED


def test_a_stream_its_server_refused_after_its_200_logs_the_error_event(
    target: TransformersTarget, draft_model: Any, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    status, events = stream_after_a_round(
        target, draft_model, monkeypatch, caplog, RevokedAfterARound, throttle.__name__
    )
    error = json.loads(events[-3].removeprefix("data: "))["error"]
    assert (status, error["code"], error["message"]) == (200, "unauthenticated", REFUSED)
    assert events[-2:] == ["data: [DONE]", ""]
    told = [r.getMessage() for r in caplog.records if r.name == throttle.__name__]
    assert told == [LINE.replace("answered a request 502", ENDED)]  # was "answered ... 502"
