"""A request body: said to be JSON in UTF-8, read as it arrives (refused the moment it
crosses the limit), then decoded.

A ``Content-Type`` other than ``application/json``, or one whose ``charset`` is not UTF-8
(``utf-8``, ``utf8``, any case), is a 415 before any byte of the body is read: JSON over a
network is UTF-8 (RFC 8259 §8.1). Whatever the framing (``Content-Length``,
``Transfer-Encoding: chunked``, a length that lies), the body is read chunk by chunk from
the ASGI stream and counted: the first byte past ``max_body_bytes`` ends the read with a
413, so the endpoint holds at most the limit plus one chunk (uvicorn pauses reading a
connection whose unread body passes 64 KiB). A declared length over the limit is refused
before any byte is read; a body still not whole after ``body_timeout_s`` (a slow sender)
is a 408. A body that is not UTF-8 is a 400 (:func:`utf8_text`) naming the byte offset
where it stops being UTF-8, or the UTF-16 or UTF-32 it is in; a leading UTF-8 byte order
mark is dropped (RFC 8259 lets a parser ignore it).
"""

from __future__ import annotations

import asyncio
import json

from starlette.requests import Request

from edgespec.runtime.openai_api.errors import ApiError, invalid, shown

BODY_TIMEOUT_S = 30.0
"""The longest a client may take to send a request body (a 408 after that)."""

UTF8_CHARSETS = frozenset({"utf-8", "utf8"})
"""The ``charset`` values (lower-cased) of a body the endpoint reads: UTF-8's name and alias."""


def _unsupported(message: str) -> ApiError:
    return ApiError(415, message, code="unsupported_media_type")


def check_content_type(content_type: str) -> None:
    """415 unless ``content_type`` is ``application/json`` with no ``charset`` or a UTF-8
    one; a web page can POST other types (text/plain, forms) to a loopback endpoint
    without a CORS preflight."""
    media, *params = content_type.split(";")
    media = media.strip().lower()
    if media != "application/json":
        got = shown(media) if media else "none"
        raise _unsupported(f"Content-Type must be application/json, got {got}")
    for param in params:
        name, _, value = param.partition("=")
        charset = value.strip().strip('"')
        if name.strip().lower() == "charset" and charset.lower() not in UTF8_CHARSETS:
            raise _unsupported(f"request body charset is {shown(charset)}; only utf-8 is accepted")


def utf8_text(raw: bytes) -> str:
    """``raw`` decoded as UTF-8, less a leading byte order mark; a 400 (``invalid_json``)
    saying the body is UTF-16 or UTF-32 when it reads as one (JSON's own detection), else
    naming the byte offset where it stops being UTF-8."""
    encoding = json.detect_encoding(raw)  # utf-8-sig: with a byte order mark
    if not encoding.startswith("utf-8"):
        raise invalid(f"request body is encoded as {encoding}; only utf-8 is accepted",
                      code="invalid_json")  # fmt: skip
    try:
        return raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        where = f"at byte offset {exc.start} (0x{raw[exc.start]:02x}: {exc.reason})"
        raise invalid(f"request body is not valid utf-8 {where}", code="invalid_json") from None


BODY_FLAG = "--openai-max-body-bytes"
"""The endpoint's flag behind the body limit, named in its refusal."""


def too_large(size_bytes: int | None, max_body_bytes: int) -> ApiError:
    """413: the body declared ``size_bytes`` long, or (``None``) one read past the limit."""
    if size_bytes is None:
        message = (f"request body is over the limit of {max_body_bytes} bytes "
                   f"({BODY_FLAG}), sent chunked")  # fmt: skip
    else:
        message = (f"request body is {size_bytes} bytes, over the limit of {max_body_bytes} "
                   f"({BODY_FLAG})")  # fmt: skip
    return ApiError(413, message, code="request_too_large")


async def _read(request: Request, max_body_bytes: int) -> bytes:
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > max_body_bytes:
            raise too_large(None, max_body_bytes)
    return bytes(body)


async def read_body(
    request: Request, max_body_bytes: int, timeout_s: float = BODY_TIMEOUT_S
) -> bytes:
    """The body of ``request``: 413 as soon as it is (or is declared) over
    ``max_body_bytes``, 408 when it is not whole after ``timeout_s``."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_body_bytes:
        raise too_large(int(declared), max_body_bytes)
    try:
        return await asyncio.wait_for(_read(request, max_body_bytes), timeout_s)
    except TimeoutError:
        raise ApiError(408, f"the request body was not received within {timeout_s:g} s",
                       code="request_timeout") from None  # fmt: skip
