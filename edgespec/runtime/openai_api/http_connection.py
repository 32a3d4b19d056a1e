"""The h11 connection under each of the endpoint's HTTP connections (:mod:`.connections`).

uvicorn drives an :class:`h11.Connection`; :class:`CheckedConnection` is one that

- bounds a request head (request line and headers) to ``max_head_bytes``, however it
  arrives: h11 bounds only a head still incomplete, so one whole in a single read (up to
  256 KiB) passed; a head over the bound is answered 431;
- keeps why a request was malformed (``refusal``): uvicorn answers every one with the same
  "Invalid HTTP request received.", this is h11's own reason in plain text (the bytes it
  quotes as text, not Python's ``bytearray(b'...')``), with h11's status (400; 501
  for a ``Transfer-Encoding`` other than ``chunked``; 431);
- closes its connection after a response sent while the request's body is unfinished
  (a 413 for a declared length, a 404 or 415 that never read it): the response says
  ``Connection: close``, uvicorn closes the connection once it is sent, and nothing more
  of that body is read. Kept open, the connection would read and drop whatever body
  bytes come, each byte postponing uvicorn's keep-alive timeout, for as long as they came.
"""

from __future__ import annotations

import ast
import re

import h11

from edgespec.runtime.openai_api.errors import ApiError, clip

MAX_HEAD_BYTES = 16 << 10
"""The largest request head (request line and headers, with their line ends) answered;
a larger one is answered 431 and its connection closed."""

_CLOSE = (b"connection", b"close")


def head_too_large(size_bytes: int | None, max_head_bytes: int) -> ApiError:
    """431: a head of ``size_bytes``, or (``None``) one still incomplete past the limit."""
    if size_bytes is None:
        message = f"the request head is over the limit of {max_head_bytes} bytes"
    else:
        message = f"the request head is {size_bytes} bytes, over the limit of {max_head_bytes}"
    return ApiError(431, message, code="request_head_too_large")


_BYTES_REPR = r"""(?<!\w)b(?:'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")"""
_QUOTED_BYTES = re.compile(rf"bytearray\(({_BYTES_REPR})\)|{_BYTES_REPR}")
"""A Python repr of bytes in h11's reasons (``bytearray(b'GET /x')``, ``b'...'``)."""

QUOTED_CHARS = 48
"""The most characters of what the client sent that a reason quotes."""


def _quoted(match: re.Match[str]) -> str:
    """The bytes that ``match`` (a repr) spells, as text between single quotes: UTF-8 where
    they are, other bytes and unprintable characters escaped, cut at :data:`QUOTED_CHARS`;
    left as it is if it is not one."""
    try:
        data = ast.literal_eval(match.group(1) or match.group(0))
    except (ValueError, SyntaxError):
        return match.group(0)
    if not isinstance(data, bytes):
        return match.group(0)
    text = data.decode("utf-8", errors="backslashreplace")
    text = "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)
    return f"'{clip(text, QUOTED_CHARS)}'"


def plain_reason(reason: str) -> str:
    """h11's ``reason`` with each repr of bytes in it (``bytearray(b'GARBAGE')``) written
    as the text it holds (``'GARBAGE'``): a client reads no Python."""
    return _QUOTED_BYTES.sub(_quoted, reason)


def malformed(reason: str, status: int = 400) -> ApiError:
    """A request h11 could not take, ``reason`` being h11's in plain text
    (:func:`plain_reason`), cut to 80 characters: it quotes what the client sent."""
    return ApiError(status, f"invalid HTTP request: {clip(plain_reason(reason))}",
                    code="invalid_http")  # fmt: skip


class CheckedConnection(h11.Connection):
    """A server-side :class:`h11.Connection` with a bound on request heads, the reason of
    the last request it refused, and a close after a response that left a body unread."""

    def __init__(self, max_head_bytes: int = MAX_HEAD_BYTES) -> None:
        super().__init__(h11.SERVER, max_incomplete_event_size=max_head_bytes)
        self.max_head_bytes = max_head_bytes
        self.refusal: ApiError | None = None

    def next_event(self) -> h11.Event | type[h11.NEED_DATA] | type[h11.PAUSED]:
        awaiting_head = self.their_state is h11.IDLE
        buffered = len(self.trailing_data[0]) if awaiting_head else 0
        try:
            event = super().next_event()
        except h11.RemoteProtocolError as exc:
            if exc.error_status_hint == 431 and awaiting_head:
                self.refusal = head_too_large(None, self.max_head_bytes)
            else:
                self.refusal = malformed(str(exc), exc.error_status_hint)
            raise
        if isinstance(event, h11.Request):
            size = buffered - len(self.trailing_data[0])
            if size > self.max_head_bytes:
                self.refusal = head_too_large(size, self.max_head_bytes)
                raise h11.RemoteProtocolError(self.refusal.message, 431)
        return event

    def send_with_data_passthrough(self, event: h11.Event) -> list[bytes] | None:
        """What ``send`` sends (it calls this): a response while the request's body is
        unfinished says ``Connection: close``."""
        if isinstance(event, h11.Response) and self.their_state is h11.SEND_BODY:
            event = _closing(event)
        return super().send_with_data_passthrough(event)


def _closing(response: h11.Response) -> h11.Response:
    """``response`` with ``Connection: close`` (h11 then ends the connection after it)."""
    if any(name == b"connection" and b"close" in value.lower() for name, value in
           response.headers):  # fmt: skip
        return response
    return h11.Response(status_code=response.status_code, reason=response.reason,
                        headers=[*response.headers, _CLOSE],
                        http_version=response.http_version)  # fmt: skip
