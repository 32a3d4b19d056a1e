"""Failures as OpenAI error bodies: ``{"error": {"message", "type", "param", "code"}}``
with the HTTP status an OpenAI client expects (400, 404, 413, 503 with ``Retry-After``),
each response built one way (:func:`json_response`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from starlette.responses import JSONResponse

from edgespec.runtime.edge.progress import NoProgress
from edgespec.runtime.errors import (
    ErrorCode,
    ReplyTooLarge,
    RequestError,
    context_refusal_numbers,
)

RETRY_AFTER_S = 1
"""The ``Retry-After`` hint (seconds) of a 503: the verification server did not answer."""

SHOWN_CHARS = 80
"""The most characters of a client's value (or a failure's text) an error message quotes."""


def clip(text: str, limit: int = SHOWN_CHARS) -> str:
    """``text`` cut to ``limit`` characters, an ellipsis marking the cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def shown(value: object, limit: int = SHOWN_CHARS) -> str:
    """``value`` (of a request's JSON body, a header, a name) as an error message quotes it:
    spelled as JSON, as the client wrote it (``null``, ``true``, ``"text"``, ``["a"]``; never
    Python's ``None``, ``True``, ``'text'``), cut by :func:`clip` at ``limit``."""
    return clip(json.dumps(value, ensure_ascii=False, default=str), limit)


class ApiError(Exception):
    """A request refused with an OpenAI error body; ``message`` says what and where."""

    def __init__(
        self,
        status: int,
        message: str,
        kind: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
        retry_after_s: int | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.kind = kind
        self.param = param
        self.code = code
        self.retry_after_s = retry_after_s

    def body(self) -> dict[str, Any]:
        return {
            "error": {
                "message": self.message,
                "type": self.kind,
                "param": self.param,
                "code": self.code,
            }
        }

    def headers(self) -> dict[str, str]:
        return {} if self.retry_after_s is None else {"Retry-After": str(self.retry_after_s)}


def json_response(error: ApiError, headers: Mapping[str, str] | None = None) -> JSONResponse:
    """``error``'s response, the app's and those sent before it alike: its status, its body
    serialised one way (compact JSON, UTF-8), its headers and ``headers`` (an ``Allow``, a
    ``Connection: close``)."""
    return JSONResponse(error.body(), status_code=error.status,
                        headers={**error.headers(), **(headers or {})})  # fmt: skip


def unknown_model(name: str, model_id: str) -> ApiError:
    """A 404: ``name`` is not ``model_id``, the one model the endpoint serves."""
    return ApiError(404, f"the model {shown(name)} does not exist; this endpoint serves "
                    f"{shown(model_id)} (see /v1/models)", param="model",
                    code="model_not_found")  # fmt: skip


def invalid(message: str, param: str | None = None, code: str | None = None) -> ApiError:
    """A 400 ``invalid_request_error`` about ``param``."""
    return ApiError(400, message, param=param, code=code)


_STATUS: dict[ErrorCode, tuple[int, str]] = {
    ErrorCode.INVALID_ARGUMENT: (400, "invalid_request_error"),
    ErrorCode.FAILED_PRECONDITION: (400, "invalid_request_error"),
    ErrorCode.NOT_FOUND: (503, "server_error"),  # the session was lost mid-request
    ErrorCode.RESOURCE_EXHAUSTED: (429, "rate_limit_error"),
    ErrorCode.UNAUTHENTICATED: (502, "server_error"),  # our credentials, not the caller's
    ErrorCode.PERMISSION_DENIED: (502, "server_error"),
    ErrorCode.UNAVAILABLE: (503, "server_error"),
    ErrorCode.CANCELLED: (503, "server_error"),
    ErrorCode.ABORTED: (503, "server_error"),  # nothing committed: the request may be retried
    ErrorCode.INTERNAL: (500, "server_error"),
}


def context_exceeded(
    prompt_tokens: int, max_tokens: int, context: int, prompt_param: str | None, name: str
) -> ApiError:
    """A prompt of ``prompt_tokens`` (``prompt_param``: ``prompt``, ``messages``, ``None``
    unknown) plus ``max_tokens`` (the field ``name`` the client gave) over the target's
    ``context``, in the client's terms; ``max_tokens`` alone leaving no room for a prompt
    names that field."""
    if max_tokens >= context:
        return invalid(f"{name} is {max_tokens}, which leaves no room for a prompt in the "
                       f"target's context of {context} tokens", param=name,
                       code="context_length_exceeded")  # fmt: skip
    return invalid(f"the prompt is {prompt_tokens} tokens and {name} is {max_tokens}: "
                   f"{prompt_tokens + max_tokens} tokens, over the target's context of "
                   f"{context}; shorten the prompt or lower {name}", param=prompt_param,
                   code="context_length_exceeded")  # fmt: skip


def from_request_error(
    exc: RequestError, prompt_param: str | None = None, max_tokens_name: str = "max_tokens"
) -> ApiError:
    """The verification server's refusal as an OpenAI error; unreachable (or overloaded)
    servers carry a ``Retry-After`` hint; a drafter that gave up making progress is a 504;
    a prompt and output beyond the target's context is :func:`context_exceeded` (about
    ``prompt_param`` and the field ``max_tokens_name``, never the wire's
    ``max_new_tokens``)."""
    if isinstance(exc, NoProgress):
        return ApiError(504, f"the drafter {exc.message}", kind="server_error",
                        code="no_progress", retry_after_s=RETRY_AFTER_S)  # fmt: skip
    if isinstance(exc, ReplyTooLarge):  # the endpoint's limit: not the server's refusal
        return invalid(exc.message, code="reply_too_large")
    over = context_refusal_numbers(exc)
    if over is not None:
        return context_exceeded(*over, prompt_param, max_tokens_name)
    status, kind = _STATUS.get(exc.code, (500, "server_error"))
    retry = RETRY_AFTER_S if status in (429, 503) else None
    where = "the verification server"
    if exc.past_deadline:
        message = (f"{where} did not answer within --request-timeout-s ({exc.message}): it is "
                   "hung, or busy with a pass that takes longer, such as a long prompt's "
                   f"first (the endpoint's --request-timeout-s must exceed it); retry after "
                   f"{RETRY_AFTER_S}s")  # fmt: skip
    elif exc.code == ErrorCode.UNAVAILABLE:
        message = f"{where} is unreachable: {exc.message}; retry after {RETRY_AFTER_S}s"
    else:
        message = f"{where} refused the request ({exc.code.value}): {exc.message}"
    return ApiError(status, message, kind=kind, code=exc.code.value.lower(), retry_after_s=retry)
