"""The verification server's refusals as OpenAI errors: every :class:`ErrorCode` has its
HTTP status and type, and the ones a retry may cure (503, 429) carry ``Retry-After``."""

from __future__ import annotations

import pytest

from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.openai_api.errors import _STATUS, RETRY_AFTER_S, from_request_error

STATUS = {
    ErrorCode.INVALID_ARGUMENT: (400, "invalid_request_error"),
    ErrorCode.FAILED_PRECONDITION: (400, "invalid_request_error"),
    ErrorCode.NOT_FOUND: (503, "server_error"),
    ErrorCode.RESOURCE_EXHAUSTED: (429, "rate_limit_error"),
    ErrorCode.UNAUTHENTICATED: (502, "server_error"),
    ErrorCode.PERMISSION_DENIED: (502, "server_error"),
    ErrorCode.UNAVAILABLE: (503, "server_error"),
    ErrorCode.CANCELLED: (503, "server_error"),
    ErrorCode.INTERNAL: (500, "server_error"),
    ErrorCode.ABORTED: (503, "server_error"),  # was 500: not in the table
}


def test_every_error_code_has_its_status() -> None:
    assert set(_STATUS) == set(ErrorCode)
    assert STATUS == _STATUS


@pytest.mark.parametrize("code", list(ErrorCode), ids=lambda code: code.value)
def test_a_refusal_is_an_openai_error(code: ErrorCode) -> None:
    error = from_request_error(RequestError(code, "what went wrong"))
    assert (error.status, error.kind, error.code) == (*STATUS[code], code.value.lower())
    retry = RETRY_AFTER_S if error.status in (429, 503) else None
    assert error.retry_after_s == retry
    if code is not ErrorCode.UNAVAILABLE:
        assert error.message == (
            f"the verification server refused the request ({code.value}): what went wrong"
        )


def test_an_aborted_round_may_be_retried() -> None:
    error = from_request_error(RequestError(ErrorCode.ABORTED, "send the block again"))
    assert (error.status, error.headers()) == (503, {"Retry-After": "1"})
    assert error.body() == {
        "error": {
            "message": "the verification server refused the request (ABORTED): "
            "send the block again",
            "type": "server_error",
            "param": None,
            "code": "aborted",
        }
    }


def test_the_servers_context_refusal_is_in_the_clients_terms() -> None:
    """It quoted ``max_new_tokens``, a field of the wire, not of the request."""
    server = "prompt (30 tokens) + max_new_tokens (20) exceeds the target's context of 40"
    error = from_request_error(RequestError(ErrorCode.INVALID_ARGUMENT, server), "messages")
    assert error.body() == {
        "error": {
            "message": "the prompt is 30 tokens and max_tokens is 20: 50 tokens, over the "
            "target's context of 40; shorten the prompt or lower max_tokens",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }


def test_a_call_past_its_deadline_is_not_said_unreachable() -> None:
    """A reachable server busy past ``--request-timeout-s`` (two 2,042-token prompts at once
    on the real Gemma target: one pass of 36 s) was "unreachable: Deadline Exceeded"."""
    error = from_request_error(RequestError(ErrorCode.UNAVAILABLE, "Deadline Exceeded"))
    assert (error.status, error.code, error.retry_after_s) == (503, "unavailable", RETRY_AFTER_S)
    assert error.message == (
        "the verification server did not answer within --request-timeout-s (Deadline "
        "Exceeded): it is hung, or busy with a pass that takes longer, such as a long "
        "prompt's first (the endpoint's --request-timeout-s must exceed it); retry after 1s"
    )
    down = from_request_error(RequestError(ErrorCode.UNAVAILABLE, "Connection refused"))
    assert down.message == (
        "the verification server is unreachable: Connection refused; retry after 1s"
    )
