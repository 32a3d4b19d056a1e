"""The HTTP server under ``/metrics`` (:mod:`.prometheus`), bounded as the gRPC port is.

prometheus_client's own ``start_http_server`` starts a thread per connection and reads
without a deadline, so sockets that connect and never speak each hold a thread and a file
descriptor for good: enough of them take the process's descriptors and lock the devices
out of the gRPC port. :func:`serve_wsgi` serves the same WSGI app (prometheus_client's, so
the exposition, its content negotiation and its paths are unchanged) with:

- at most :attr:`HttpBounds.max_connections` connections open, each on a thread of its own
  (no thread or descriptor for any other). One more closes the connection that has waited
  longest without sending its request (a silent socket gives way to a scrape); when every
  one is past its request head (being answered), the new one is answered 503 and closed;
- a request head (request line and headers) whole within ``head_timeout_s`` of the
  connection opening, else the connection is closed (after a 408 when part of one came),
  and of at most ``max_head_bytes``, else 431 and closed;
- a response sent whole within ``write_timeout_s`` (a client that stops reading is cut off).

One request per connection, as prometheus_client's server: the response is HTTP/1.0 and
closes its connection."""

from __future__ import annotations

import contextlib
import io
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

MAX_CONNECTIONS = 16
"""A Prometheus server scrapes with one connection at a time (a few when several scrape, or
an operator's curl beside them); 16 leaves room for those and costs at most 16 threads and
descriptors, well inside the 128 descriptors ``edgespec serve`` keeps beside gRPC's."""
HEAD_TIMEOUT_S = 5.0
"""A scraper sends its request head as it connects (a few hundred bytes)."""
MAX_HEAD_BYTES = 8 << 10
WRITE_TIMEOUT_S = 10.0
"""Prometheus' default scrape timeout: a scrape that took longer has been given up."""
EVICTED_EXIT_S = 1.0
"""How long a new connection waits for the thread of the one it closed to end."""


@dataclass(frozen=True, slots=True)
class HttpBounds:
    """What a client of the ``/metrics`` port may hold, and for how long."""

    max_connections: int = MAX_CONNECTIONS
    head_timeout_s: float = HEAD_TIMEOUT_S
    max_head_bytes: int = MAX_HEAD_BYTES
    write_timeout_s: float = WRITE_TIMEOUT_S

    def __post_init__(self) -> None:
        if self.max_connections < 1 or self.max_head_bytes < 1:
            raise ValueError(f"need max_connections >= 1 and max_head_bytes >= 1, got "
                             f"{self.max_connections}, {self.max_head_bytes}")  # fmt: skip
        if not (self.head_timeout_s > 0 and self.write_timeout_s > 0):
            raise ValueError(f"need head_timeout_s > 0 and write_timeout_s > 0, got "
                             f"{self.head_timeout_s}, {self.write_timeout_s}")  # fmt: skip


@dataclass(frozen=True, slots=True)
class Refusal:
    """A request refused before the app: its status and why, sent as plain text."""

    status: HTTPStatus
    message: str

    def response(self) -> bytes:
        body = f"# HTTP {self.status.value} {self.status.phrase}: {self.message}\n".encode()
        head = (f"HTTP/1.0 {self.status.value} {self.status.phrase}\r\n"
                "Content-Type: text/plain; charset=utf-8\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n")  # fmt: skip
        return head.encode("ascii") + body


def _head_end(buffer: bytes) -> int | None:
    """Where the request head in ``buffer`` ends (after its empty line), if it is whole."""
    ends = [i + len(mark) for mark in (b"\n\r\n", b"\n\n") if (i := buffer.find(mark)) >= 0]
    return min(ends, default=None)


def read_head(
    sock: socket.socket, bounds: HttpBounds, clock: Callable[[], float]
) -> bytes | Refusal | None:
    """The request head ``sock`` sends within ``bounds.head_timeout_s`` (``clock``'s time,
    from now), whole; a :class:`Refusal` (408, 431) to send, or ``None`` when the client
    sent nothing in time, or left."""
    deadline_s = clock() + bounds.head_timeout_s
    buffer = b""
    while (end := _head_end(buffer)) is None or end > bounds.max_head_bytes:
        if end is not None or len(buffer) >= bounds.max_head_bytes:
            return Refusal(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE,
                           f"the request head is over the limit of {bounds.max_head_bytes} "
                           "bytes")  # fmt: skip
        left_s = deadline_s - clock()
        try:
            if left_s <= 0:
                raise TimeoutError
            sock.settimeout(left_s)
            chunk = sock.recv(4096)
        except TimeoutError:
            if not buffer:
                return None
            return Refusal(HTTPStatus.REQUEST_TIMEOUT, "the request head was not received "
                           f"within {bounds.head_timeout_s:g} s")  # fmt: skip
        except OSError:
            return None
        if not chunk:
            return None
        buffer += chunk
    return buffer[:end]


class _DeadlineWriter(io.RawIOBase):
    """The response's bytes, sent whole by ``deadline_s`` (``clock``'s time) or not at all:
    past it the client is taken for gone (``ConnectionAbortedError``, which wsgiref drops
    quietly, as a client that closed)."""

    def __init__(self, sock: socket.socket, deadline_s: float, clock: Callable[[], float]):
        self._sock, self._deadline_s, self._clock = sock, deadline_s, clock

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        left_s = self._deadline_s - self._clock()
        if left_s <= 0:
            raise ConnectionAbortedError("the response was not read in time")
        self._sock.settimeout(left_s)
        try:
            self._sock.sendall(data)
        except TimeoutError as exc:
            raise ConnectionAbortedError("the response was not read in time") from exc
        return len(data)


class _Handler(WSGIRequestHandler):
    """wsgiref's handler, silent (as prometheus_client's), on a head read whole first."""

    server: BoundedWSGIServer

    def handle(self) -> None:
        server, sock = self.server, self.connection
        bounds = server.bounds
        head = read_head(sock, bounds, server.clock)
        if not server.answering(sock) or not isinstance(head, bytes):
            if isinstance(head, Refusal):
                _send_quietly(sock, head.response())
            return
        self.rfile.close()  # the socket's reader: the head is all the request there is
        self.rfile = io.BytesIO(head)
        deadline_s = server.clock() + bounds.write_timeout_s
        self.wfile = _DeadlineWriter(sock, deadline_s, server.clock)  # type: ignore[assignment]
        super().handle()

    def log_message(self, format: str, *args: Any) -> None:  # the base's parameter names
        """Nothing: a scrape is not worth a log line."""


def _send_quietly(sock: socket.socket, data: bytes) -> None:
    """A short refusal, sent if the socket takes it at once (a fresh socket's buffer does)."""
    with contextlib.suppress(OSError):
        sock.setblocking(False)
        sock.sendall(data)


class BoundedWSGIServer(WSGIServer):
    """A WSGI server with a thread per connection, at most ``bounds.max_connections`` of
    them (see the module's docstring)."""

    request_queue_size = 128
    """The kernel's queue of connections not yet accepted (they hold none of this process's
    descriptors): a burst waits there rather than retrying its handshake a second later."""

    def __init__(self, host: str, port: int, bounds: HttpBounds, clock: Callable[[], float]):
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        self.address_family, _, _, _, address = infos[0]
        self.bounds, self.clock = bounds, clock
        self._slots = threading.BoundedSemaphore(bounds.max_connections)
        self._lock = threading.Lock()
        self._awaiting_head: dict[socket.socket, None] = {}  # oldest first
        self._full = Refusal(HTTPStatus.SERVICE_UNAVAILABLE,
                             f"{bounds.max_connections} connections open, the limit, each "
                             "being answered; retry")  # fmt: skip
        super().__init__((str(address[0]), int(address[1])), _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False) and not (
            self._evict_oldest() and self._slots.acquire(timeout=EVICTED_EXIT_S)
        ):
            _send_quietly(request, self._full.response())
            self.shutdown_request(request)
            return
        with self._lock:
            self._awaiting_head[request] = None
        try:
            thread = threading.Thread(
                target=self._serve_one, args=(request, client_address), daemon=True
            )
            thread.start()
        except BaseException:
            self._done(request)
            raise

    def answering(self, sock: socket.socket) -> bool:
        """Whether ``sock``, its request head read, is to be answered (not closed to make
        room for a newer connection); it can no longer be closed so."""
        with self._lock:
            return self._awaiting_head.pop(sock, False) is None

    def _evict_oldest(self) -> bool:
        """Close the connection that has waited longest for its request head, if any; its
        thread then ends and gives its slot back."""
        with self._lock:
            oldest = next(iter(self._awaiting_head), None)
            if oldest is None:
                return False
            del self._awaiting_head[oldest]
            with contextlib.suppress(OSError):
                oldest.shutdown(socket.SHUT_RDWR)  # its thread's read returns at once
            return True

    def _serve_one(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self._done(request)

    def _done(self, request: Any) -> None:
        with self._lock:
            self._awaiting_head.pop(request, None)
        self.shutdown_request(request)
        self._slots.release()


def serve_wsgi(
    host: str,
    port: int,
    app: Callable[..., Any],
    bounds: HttpBounds,
    clock: Callable[[], float],
) -> BoundedWSGIServer:
    """Serve ``app`` on ``host:port`` (0: a free port) from a daemon thread; returns the
    server (``shutdown()`` then ``server_close()`` to stop it)."""
    server = BoundedWSGIServer(host, port, bounds, clock)
    server.set_app(app)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
