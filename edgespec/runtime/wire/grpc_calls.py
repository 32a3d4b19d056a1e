"""What one call of the gRPC client (:mod:`edgespec.runtime.wire.grpc_client`) comes to: its
session's ids checked against the wire's uint32 before it is sent (:func:`check_uint32s`),
its failure as a :class:`RequestError` (:func:`to_request_error`), and a unary call's answer
waited for until a cancel event is set (:func:`answered`, :func:`answered_or_cancelled`).

A call the client did not cancel that ends ``CANCELLED`` was cut by the server: one stopping
without grace (``edgespec serve`` stopped, restarted) cuts some of the calls under way so,
others ``UNAVAILABLE`` (``Cancelling all calls``), whichever its connection's teardown
reaches first. Both are the server going away, so both are ``UNAVAILABLE`` here, which the
drafter retries (:mod:`edgespec.runtime.edge.reconnect`); the client's own cancellations (a
stream's chunk past its deadline, an open cut by a cancel event) are told apart before
this, and gRPC says :data:`LOCAL_CANCEL_DETAILS` of them.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Any

import grpc

from edgespec.core.wire_limits import UINT32_LIMIT
from edgespec.runtime.edge.reconnect import Cancelled
from edgespec.runtime.errors import ErrorCode, ReplyTooLarge, RequestError
from edgespec.runtime.messages import SessionSpec
from edgespec.runtime.wire.grpc_common import ERROR_CODE

LOCAL_CANCEL_DETAILS = "Locally cancelled by application!"
"""gRPC's details of a call its own client cancelled (left ``CANCELLED``)."""

RECEIVED_TOO_LARGE = re.compile(r"CLIENT: Received message larger than max \((\d+) vs\. (\d+)\)")
"""gRPC's details of a reply over the client's own receive limit (``RESOURCE_EXHAUSTED``):
the reply's bytes and the limit (a request over the server's is :data:`SENT_TOO_LARGE`)."""

SENT_TOO_LARGE = re.compile(r"SERVER: Received message larger than max \((\d+) vs\. (\d+)\)")
"""gRPC's details of a request over the server's receive limit (``RESOURCE_EXHAUSTED``)."""


def _over_server_limit(num_bytes: int, limit: int) -> RequestError:
    """A request the server's gRPC refused for its size: no retry makes it fit (it was a
    ``RESOURCE_EXHAUSTED``, which the endpoint answers 429, retry later)."""
    return RequestError(ErrorCode.INVALID_ARGUMENT, f"the request is {num_bytes} bytes, over the "
                        f"server's max_message_bytes ({limit}): shorten the prompt or the draft "
                        "block, or raise the server's max_message_bytes")  # fmt: skip


def to_request_error(exc: grpc.RpcError) -> RequestError:
    """A call's gRPC failure as the :class:`RequestError` of the same code; a deadline
    exceeded, and a ``CANCELLED`` the client did not ask for (the server stopping), are
    ``UNAVAILABLE``; a reply over the client's own message limit, :class:`ReplyTooLarge`, a
    request over the server's, ``INVALID_ARGUMENT`` naming its limit; a status the runtime
    has no code for, ``INVALID_ARGUMENT`` naming it."""
    code = exc.code() if hasattr(exc, "code") else grpc.StatusCode.UNKNOWN
    details = exc.details() if hasattr(exc, "details") else str(exc)
    too_large = RECEIVED_TOO_LARGE.search(details or "")
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED and too_large is not None:
        return ReplyTooLarge(int(too_large.group(1)), int(too_large.group(2)))
    sent = SENT_TOO_LARGE.search(details or "")
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED and sent is not None:
        return _over_server_limit(int(sent.group(1)), int(sent.group(2)))
    if code == grpc.StatusCode.CANCELLED and details != LOCAL_CANCEL_DETAILS:
        said = "" if details in ("", code.name) else f": {details}"
        return RequestError(ErrorCode.UNAVAILABLE, f"the server cancelled the call "
                            f"(CANCELLED{said}): it is stopping or restarting")  # fmt: skip
    mapped = ERROR_CODE.get(code)
    if mapped is None:
        mapped = ErrorCode.UNAVAILABLE if code == grpc.StatusCode.DEADLINE_EXCEEDED else None
    if mapped is None:
        return RequestError(ErrorCode.INVALID_ARGUMENT, f"{code.name}: {details}")
    return RequestError(mapped, details or code.name)


def answered(call: Any, cancel: threading.Event | None, poll_s: float) -> bool:
    """Wait for ``call`` (a unary call's future, ended by its own deadline at the latest):
    ``True`` once it is done, ``False`` as soon as ``cancel`` is set (looked at every
    ``poll_s``; the call is left to its caller to cancel)."""
    done = threading.Event()
    call.add_done_callback(lambda _: done.set())
    while not done.wait(poll_s):
        if cancel is not None and cancel.is_set():
            return False
    return True


def answered_or_cancelled(
    call: Any,
    cancel: threading.Event | None,
    poll_s: float,
    on_cancel: Callable[[], object] | None,
    what: str,
) -> None:
    """Wait for ``call`` (:func:`answered`); once ``cancel`` is set, or on an interrupt,
    the call is cancelled, ``on_cancel`` run and :class:`Cancelled` raised (``what`` was
    unanswered)."""
    done = False
    try:
        done = answered(call, cancel, poll_s)
    finally:
        if not done:
            call.cancel()
            if on_cancel is not None:
                on_cancel()
    if not done:
        raise Cancelled(f"cancelled while {what} was unanswered")


def check_uint32s(spec: SessionSpec) -> SessionSpec:
    """``spec`` when its prompt ids and ``max_new_tokens`` fit the wire's uint32; else
    ``INVALID_ARGUMENT`` naming the value (protobuf's own refusal names no field)."""
    ids, budget = spec.prompt_token_ids, spec.sampling.max_new_tokens
    if ids and not 0 <= min(ids) <= max(ids) < UINT32_LIMIT:
        position = next(i for i, t in enumerate(ids) if not 0 <= t < UINT32_LIMIT)
        raise RequestError(
            ErrorCode.INVALID_ARGUMENT,
            f"prompt token {position} (id {ids[position]}) is outside [0, 2**32), the ids "
            "the wire carries (uint32)",
        )
    if not 0 <= budget < UINT32_LIMIT:
        raise RequestError(
            ErrorCode.INVALID_ARGUMENT,
            f"max_new_tokens {budget} is outside [0, 2**32), what the wire carries (uint32)",
        )
    return spec
