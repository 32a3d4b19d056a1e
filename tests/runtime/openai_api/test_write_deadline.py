"""A client that stops reading while the endpoint's bytes wait to be sent has its
connection aborted after ``write_timeout_s`` without progress, and its stream (and so its
generation) ends; before, the stream waited to send for good once the sockets' buffers
filled, holding the connection (one of ``max_connections``) and, in a close, its file
descriptor. A client that reads, however slowly, gets every byte. Raw sockets against a
small streaming app under the endpoint's own server."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator

import pytest
from fastapi import FastAPI
from fastapi.responses import StreamingResponse

from edgespec.runtime.openai_api.serve import ApiThread

CHUNK_BYTES = 1 << 20
WRITE_TIMEOUT_S = 0.5


class Stream:
    """An app streaming ``num_chunks`` chunks of ``CHUNK_BYTES``; ``ended`` once its
    generator has ended (finished or cancelled), ``sent`` chunks handed to the server."""

    def __init__(self, num_chunks: int) -> None:
        self.num_chunks = num_chunks
        self.ended = threading.Event()
        self.sent = 0

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.get("/stream")
        async def stream() -> StreamingResponse:
            return StreamingResponse(self._chunks(), media_type="application/octet-stream")

        return app

    async def _chunks(self) -> AsyncIterator[bytes]:
        try:
            for _ in range(self.num_chunks):
                await asyncio.sleep(0)  # as a generation's stream waits for its text
                yield b"x" * CHUNK_BYTES
                self.sent += 1
        finally:
            self.ended.set()


def _serve(stream: Stream) -> Iterator[ApiThread]:
    running = ApiThread(stream.app(), "127.0.0.1", write_timeout_s=WRITE_TIMEOUT_S).start()
    yield running
    running.stop()


def _ask(api: ApiThread) -> socket.socket:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a small window: it fills
    sock.connect(("127.0.0.1", api.port))
    sock.sendall(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
    return sock


@pytest.fixture
def endless() -> Iterator[tuple[Stream, ApiThread]]:
    stream = Stream(num_chunks=1 << 14)  # 16 GiB: never sent whole
    for api in _serve(stream):
        yield stream, api


def test_a_client_that_stops_reading_is_cut_off_and_its_stream_ends(
    endless: tuple[Stream, ApiThread],
) -> None:
    stream, api = endless
    sock = _ask(api)
    try:
        start_s = time.monotonic()
        assert stream.ended.wait(15.0)  # was never: the stream waited to send for good
        assert time.monotonic() - start_s >= WRITE_TIMEOUT_S
        assert stream.sent < 64  # cut off once the buffers filled, not sent on
        sock.settimeout(10.0)
        received = b""
        while chunk := sock.recv(1 << 20):  # what the buffers held, then the end
            received += chunk
        assert not received.endswith(b"0\r\n\r\n")  # cut short: no last chunk
        assert len(received) < stream.sent * CHUNK_BYTES + 4096
    finally:
        sock.close()


def test_a_client_that_reads_slowly_gets_every_byte() -> None:
    """Reading 128 KiB every 0.1 s, a MiB chunk takes longer than ``write_timeout_s`` to
    drain: each timeout sees progress and waits on."""
    stream = Stream(num_chunks=4)
    for api in _serve(stream):
        sock = _ask(api)
        received = b""
        try:
            sock.settimeout(10.0)
            # to the last chunk (or the end): stopping at 4 MiB received, headers and chunk
            # sizes counted, left the stream's last bytes unread when a read ended there
            while not received.endswith(b"0\r\n\r\n") and (chunk := sock.recv(128 << 10)):
                received += chunk
                assert len(received) < 4 * CHUNK_BYTES + (64 << 10)  # the stream, not more
                time.sleep(0.1 * len(chunk) / (128 << 10))
        finally:
            sock.close()
        body = received.partition(b"\r\n\r\n")[2]
        assert body.count(b"x") == 4 * CHUNK_BYTES
        assert stream.sent == 4
