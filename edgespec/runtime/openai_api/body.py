"""A request body read as it arrives, refused the moment it crosses the limit.

Whatever the framing (``Content-Length``, ``Transfer-Encoding: chunked``, a length that
lies), the body is read chunk by chunk from the ASGI stream and counted: the first byte
past ``max_body_bytes`` ends the read with a 413, so the endpoint holds at most the limit
plus one chunk (uvicorn pauses reading a connection whose unread body passes 64 KiB). A
declared length over the limit is refused before any byte is read; a body still not whole
after ``body_timeout_s`` (a slow sender) is a 408.
"""

from __future__ import annotations

import asyncio

from starlette.requests import Request

from edgespec.runtime.openai_api.errors import ApiError

BODY_TIMEOUT_S = 30.0
"""The longest a client may take to send a request body (a 408 after that)."""


def too_large(size: str, max_body_bytes: int) -> ApiError:
    return ApiError(413, f"request body is {size} bytes, over the limit of {max_body_bytes}",
                    code="request_too_large")  # fmt: skip


async def _read(request: Request, max_body_bytes: int) -> bytes:
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > max_body_bytes:
            raise too_large(f"more than {max_body_bytes}", max_body_bytes)
    return bytes(body)


async def read_body(
    request: Request, max_body_bytes: int, timeout_s: float = BODY_TIMEOUT_S
) -> bytes:
    """The body of ``request``: 413 as soon as it is (or is declared) over
    ``max_body_bytes``, 408 when it is not whole after ``timeout_s``."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_body_bytes:
        raise too_large(declared, max_body_bytes)
    try:
        return await asyncio.wait_for(_read(request, max_body_bytes), timeout_s)
    except TimeoutError:
        raise ApiError(408, f"the request body was not received within {timeout_s:g} s",
                       code="request_timeout") from None  # fmt: skip
