"""A verification server that takes connections and calls and answers none of them: what a
client sees of a server stopped with SIGSTOP, or hung (TCP and HTTP/2 up, nothing answers).
``Health`` may answer (a server that hung after a client reached it), and ``OpenSession``
(one that hung once its sessions were open)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from typing import Any

import grpc

from edgespec.runtime.wire.codec import pb
from edgespec.runtime.wire.grpc_common import pb_grpc

VOCAB_SIZE = 64


class _Silent(pb_grpc.VerificationServicer):  # type: ignore[misc]
    """Every call recorded by method name as it arrives (and the time its deadline left it,
    ``None`` without one), then held until ``release`` is set; ``Health`` answered at once
    unless ``health_hangs``, ``OpenSession`` when ``opens``."""

    def __init__(self, release: threading.Event, health_hangs: bool, opens: bool) -> None:
        self.release = release
        self.health_hangs = health_hangs
        self.opens = opens
        self.calls: list[str] = []
        self.remaining_s: list[float | None] = []
        self._lock = threading.Lock()

    def _record(self, method: str, context: Any) -> None:
        with self._lock:
            self.calls.append(method)
            self.remaining_s.append(context.time_remaining())

    def _hold(self, method: str, context: Any) -> Any:
        self._record(method, context)
        self.release.wait()
        context.abort(grpc.StatusCode.UNAVAILABLE, "the hung server was stopped")

    def OpenSession(self, request: Any, context: Any) -> Any:
        if self.opens:
            self._record("OpenSession", context)
            return pb.OpenSessionResponse()
        return self._hold("OpenSession", context)

    def Verify(self, request: Any, context: Any) -> Any:
        return self._hold("Verify", context)

    def CloseSession(self, request: Any, context: Any) -> Any:
        return self._hold("CloseSession", context)

    def Stats(self, request: Any, context: Any) -> Any:
        return self._hold("Stats", context)

    def Health(self, request: Any, context: Any) -> Any:
        if self.health_hangs:
            return self._hold("Health", context)
        return pb.HealthResponse(serving=True, vocab_size=VOCAB_SIZE)


@contextmanager
def hung_server(health_hangs: bool = True, opens: bool = False) -> Iterator[tuple[str, list[str]]]:
    """A silent server on loopback: its address and the methods called on it, in order of
    arrival; its held calls released (``UNAVAILABLE``) as the block ends."""
    with hung_servicer(health_hangs, opens) as (address, servicer):
        yield address, servicer.calls


@contextmanager
def hung_servicer(health_hangs: bool = True, opens: bool = False) -> Iterator[tuple[str, _Silent]]:
    """:func:`hung_server` with its servicer: the calls and the time each had left."""
    release = threading.Event()
    servicer = _Silent(release, health_hangs, opens)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=32))
    pb_grpc.add_VerificationServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}", servicer
    finally:
        release.set()
        server.stop(grace=0)


def assert_deadlines(
    servicer: _Silent, expected_s: tuple[float, ...], slack_s: float = 0.8, wire_s: float = 0.1
) -> None:
    """Each call's deadline as the server had it, one per call in order: at most ``slack_s``
    below ``expected_s`` (the call's way to the server on a loaded machine), at most
    ``wire_s`` above (the deadline's encoding on the wire)."""
    got = servicer.remaining_s
    assert len(got) == len(expected_s), (got, expected_s)
    for remaining_s, want_s in zip(got, expected_s, strict=True):
        assert remaining_s is not None and -slack_s < remaining_s - want_s < wire_s, (
            got, expected_s)  # fmt: skip
