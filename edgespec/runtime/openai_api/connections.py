"""The endpoint's HTTP connections, bounded before a request reaches the app.

uvicorn's own HTTP/1.1 protocol (h11) bounds neither the time a request head takes to
arrive nor how many connections stay open, and answers malformed HTTP in plain text with
one message for all. :func:`bounded_protocol` is that protocol with:

- at most ``max_connections`` open at once (the serving process caps that by its
  open-file limit, :mod:`.descriptors`), at most ``max_per_address`` of them from one peer
  address (a quarter by default): one more is answered 503 (an OpenAI error body,
  ``Retry-After``) and closed as it opens, so idle or slow clients cannot take every file
  descriptor of the device, nor one address every connection;
- a request head (request line and headers) whole within ``head_timeout_s`` of the
  connection opening, or of the first byte after the previous response: otherwise 408 when
  part of one came, and the connection closed either way (a client trickling a head byte by
  byte holds a connection at most that long);
- a response's bytes read by the client within ``write_timeout_s`` of being written: a
  client that stops reading (a stream it never reads) while bytes wait to be sent has its
  connection aborted after that, its generation cancelled; otherwise it would hold its
  connection for good, the bytes left once the socket's buffers filled never sent;
- a request head of at most ``max_head_bytes`` (16 KiB), else 431, and malformed HTTP
  answered 400 (501 for an unsupported ``Transfer-Encoding``) with an OpenAI error body,
  ``code`` ``invalid_http``, giving h11's reason;
- the connection closed after a response sent before the request's body was read whole
  (:mod:`.http_connection`);
- malformed requests logged in one line at most every ``throttle.LOG_INTERVAL_S``, saying
  how many were not (uvicorn logs one line each, "Invalid HTTP request received.": a client
  could fill the device's log at line rate);
- a request sent whole before the client half-closed its socket (``shutdown(SHUT_WR)``)
  still answered, if within ``HALF_CLOSE_GRACE_S`` (uvicorn takes the end of the client's
  stream for the client gone, and drops the response).

:class:`RefuseAmbiguousFraming` refuses a request that declares both ``Content-Length`` and
``Transfer-Encoding`` (400, connection closed): a proxy in front could read another body
than ours from it (request smuggling).
"""

from __future__ import annotations

import array
import asyncio
import fcntl
import logging
import termios
from collections import Counter
from http import HTTPStatus
from typing import Any

import h11
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from edgespec.runtime.openai_api.errors import RETRY_AFTER_S, ApiError, json_response
from edgespec.runtime.openai_api.http_connection import (
    MAX_HEAD_BYTES,
    CheckedConnection,
    malformed,
)
from edgespec.runtime.openai_api.throttle import Throttle
from edgespec.runtime.openai_api.uvicorn_lines import WithoutPerRequestLines

LOG = logging.getLogger(__name__)

HEAD_TIMEOUT_S = 10.0
"""The longest a request's head may take to arrive (408 and closed after that)."""
MAX_CONNECTIONS = 1024
"""The most connections open at once; one more is answered 503 and closed."""
WRITE_TIMEOUT_S = 30.0
"""The longest bytes the endpoint wrote may wait for the client to read them (the
connection aborted after that)."""
HALF_CLOSE_GRACE_S = 2.0
"""How long a request sent whole keeps its connection after the client's end of stream
(a FIN) came before its response began: enough for an answer that needs no long
generation. TCP cannot tell a client that half-closed (``shutdown(SHUT_WR)``) from one gone
(``close()``): both send a FIN, and only a write finds the second gone. So a client that
left before its response began is taken for gone after this, its generation cancelled
(uvicorn took it at once)."""


def unsent_bytes(transport: asyncio.Transport) -> int:
    """The bytes written to ``transport`` that the client has not taken: those waiting in
    this process and, on Linux, those in the socket's send queue (``SIOCOUTQ``; the kernel
    asks for more only once half its buffer is free, so a client reading slowly drains
    that queue long before this process's part moves)."""
    waiting = transport.get_write_buffer_size()
    sock = transport.get_extra_info("socket")
    if sock is None:
        return waiting
    try:
        queued = array.array("i", [0])
        fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, queued)
    except (OSError, AttributeError):  # not Linux, or the socket closed
        return waiting
    return waiting + queued[0]


def _closing_response(error: ApiError) -> JSONResponse:
    """``error``'s response, closing its connection: built as the app's error responses are
    (:func:`.errors.json_response`), so every refusal reads the same."""
    return json_response(error, {"Connection": "close"})


def raw_response(error: ApiError) -> bytes:
    """``error`` as a whole HTTP/1.1 response that closes its connection (sent before the
    app: :func:`_closing_response`'s head and body)."""
    response = _closing_response(error)
    head = f"HTTP/1.1 {error.status} {HTTPStatus(error.status).phrase}\r\n".encode("ascii")
    fields = b"".join(name + b": " + value + b"\r\n" for name, value in response.raw_headers)
    return head + fields + b"\r\n" + bytes(response.body)


class BoundedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with connection caps, a request-head deadline and size bound,
    a write deadline, throttled log lines for malformed requests and half-closed connections
    answered; bounds, throttle, counts (one an endpoint): :func:`bounded_protocol`'s class."""

    head_timeout_s: float = HEAD_TIMEOUT_S
    write_timeout_s: float = WRITE_TIMEOUT_S
    max_connections: int = MAX_CONNECTIONS
    max_per_address: int = MAX_CONNECTIONS // 4
    max_head_bytes: int = MAX_HEAD_BYTES
    refusals: Throttle  # the endpoint's, for the log lines of malformed requests
    per_address: Counter[str]  # the endpoint's open connections by peer address
    _address: str | None = None
    _head_timer: asyncio.TimerHandle | None = None
    _write_timer: asyncio.TimerHandle | None = None
    _half_closed: asyncio.TimerHandle | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.conn: CheckedConnection = CheckedConnection(self.max_head_bytes)
        self.logger = WithoutPerRequestLines(self.logger)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        # writing pauses whenever a byte waits in this process (the socket's buffers full),
        # and only then: the write deadline runs exactly while the client is not reading
        transport.set_write_buffer_limits(high=0)
        peer = transport.get_extra_info("peername")
        self._address = str(peer[0]) if isinstance(peer, tuple) and peer else "unknown"
        self.per_address[self._address] += 1
        if len(self.connections) > self.max_connections:
            held = f"{self.max_connections} connections open, its limit"
        elif self.per_address[self._address] > self.max_per_address:
            held = f"{self.max_per_address} connections open from {self._address}, the most one"
            held += " address may hold"
        else:
            self._watch_head()
            return
        self._close_with(ApiError(503, f"this endpoint has {held}; retry after {RETRY_AFTER_S}s",
                                  kind="server_error", code="too_many_connections",
                                  retry_after_s=RETRY_AFTER_S))  # fmt: skip

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch_head()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._address is not None and self.per_address[self._address] == 1:
            del self.per_address[self._address]  # an address with none open: not kept
        elif self._address is not None:
            self.per_address[self._address] -= 1
        self._stop_head_timer()
        self._stop_write_timer()
        if self._half_closed is not None:
            self._half_closed.cancel()
        super().connection_lost(exc)

    def pause_writing(self) -> None:
        """Bytes wait for the client to read: some must go within ``write_timeout_s``."""
        super().pause_writing()
        if self._write_timer is None:
            self._arm_write_timer()

    def resume_writing(self) -> None:
        super().resume_writing()
        self._stop_write_timer()

    def _arm_write_timer(self) -> None:
        waiting = unsent_bytes(self.transport)
        self._write_timer = self.loop.call_later(self.write_timeout_s, self._write_due, waiting)

    def _write_due(self, waiting_bytes: int) -> None:
        """``write_timeout_s`` after ``waiting_bytes`` waited: fewer wait now (the client
        reads, slowly), so the next ``write_timeout_s`` begins; none went, and the
        connection is aborted (a close would wait for them to be sent, for good), which
        ends the request's stream and its generation."""
        self._write_timer = None
        if unsent_bytes(self.transport) < waiting_bytes:
            self._arm_write_timer()
        else:
            self.transport.abort()

    def _stop_write_timer(self) -> None:
        if self._write_timer is not None:
            self._write_timer.cancel()
            self._write_timer = None

    def eof_received(self) -> bool | None:  # type: ignore[override]  # asyncio.Protocol's
        """The client's end of stream: a request it sent whole and whose response has not
        begun keeps the connection open (for writing) up to ``HALF_CLOSE_GRACE_S``, closed
        after its response; otherwise (nothing to answer, a request cut short, a client
        that leaves mid-stream) the connection closes now, as uvicorn's does."""
        cycle = self.cycle
        whole = self.conn.their_state in (h11.DONE, h11.MUST_CLOSE)  # MUST_CLOSE: HTTP/1.0
        if cycle is None or cycle.response_started or not whole:
            return None  # asyncio closes the transport: the request, if any, sees it gone
        cycle.keep_alive = False  # nothing more can come: close once it is answered
        if self._half_closed is None:
            self._half_closed = self.loop.call_later(HALF_CLOSE_GRACE_S, self.transport.close)
        return True

    def send_400_response(self, msg: str) -> None:
        """Answer a request h11 refused, with h11's reason (``msg`` is uvicorn's, the same
        for all) and status: 400, 431 for a head too large, 501; logged in one line at
        most every ``refusals.interval_s``, which says how many were not."""
        refusal = self.conn.refusal or malformed(msg)
        count = self.refusals.due()
        if count is not None:
            self._log_refusal(refusal, count - 1)
        self._close_with(refusal)

    def _log_refusal(self, refusal: ApiError, num_unlogged: int) -> None:
        client = f"{self.client[0]}:{self.client[1]}" if self.client else "an unknown address"
        unlogged = f"; {num_unlogged} more since the last such line, not logged"
        LOG.warning("the OpenAI-compatible endpoint refused a malformed request from %s: "
                    "%d %s%s", client, refusal.status, refusal.message,
                    unlogged if num_unlogged else "")  # fmt: skip

    def _watch_head(self) -> None:
        """Arm the head deadline while a request's head is awaited, disarm it after."""
        if self.conn.their_state is not h11.IDLE or self.transport.is_closing():
            self._stop_head_timer()
        elif self._head_timer is None:
            self._head_timer = self.loop.call_later(self.head_timeout_s, self._head_timed_out)

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.conn.their_state is not h11.IDLE or self.transport.is_closing():
            return
        if not self.conn.trailing_data[0]:  # nothing of a request came: just close
            self.transport.close()
            return
        message = f"the request head was not received within {self.head_timeout_s:g} s"
        self._close_with(ApiError(408, message, code="request_timeout"))

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _close_with(self, error: ApiError) -> None:
        self._stop_head_timer()
        self.transport.write(raw_response(error))
        self.transport.close()


def bounded_protocol(
    head_timeout_s: float = HEAD_TIMEOUT_S,
    max_connections: int = MAX_CONNECTIONS,
    max_head_bytes: int = MAX_HEAD_BYTES,
    refusals: Throttle | None = None,
    write_timeout_s: float = WRITE_TIMEOUT_S,
    max_per_address: int | None = None,
) -> type[BoundedH11Protocol]:
    """:class:`BoundedH11Protocol` with these bounds (``max_per_address``: a quarter of
    ``max_connections``, at least 1, when ``None``) and ``refusals`` (a new
    :class:`Throttle` when ``None``) for its connections' log lines of malformed requests
    (uvicorn's ``http=`` takes a class)."""
    per_address = max(1, max_connections // 4) if max_per_address is None else max_per_address
    if not head_timeout_s > 0 or not write_timeout_s > 0:
        raise ValueError(f"need head_timeout_s > 0 and write_timeout_s > 0, got "
                         f"{head_timeout_s}, {write_timeout_s}")  # fmt: skip
    if min(max_connections, max_head_bytes, per_address) < 1:
        raise ValueError(f"need max_connections, max_head_bytes and max_per_address >= 1, got "
                         f"{max_connections}, {max_head_bytes}, {per_address}")  # fmt: skip
    bounds = {"head_timeout_s": head_timeout_s, "write_timeout_s": write_timeout_s,
              "max_connections": max_connections, "max_per_address": per_address,
              "max_head_bytes": max_head_bytes, "per_address": Counter[str](),
              "refusals": refusals or Throttle()}  # fmt: skip
    return type("BoundedH11Protocol", (BoundedH11Protocol,), bounds)


class RefuseAmbiguousFraming:
    """ASGI middleware: 400 (and the connection closed) for a request whose body length is
    declared twice, by ``Content-Length`` and by ``Transfer-Encoding``."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            names = {name.lower() for name, _ in scope["headers"]}
            if b"content-length" in names and b"transfer-encoding" in names:
                error = ApiError(400, "a request may declare its body's length by "
                                 "Content-Length or by Transfer-Encoding, not both",
                                 code="invalid_http")  # fmt: skip
                await _closing_response(error)(scope, receive, send)
                return
        await self.app(scope, receive, send)
