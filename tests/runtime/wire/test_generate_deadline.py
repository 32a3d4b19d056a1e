"""``RemoteVerifier.generate`` gives each chunk the client's ``timeout_s`` to come, the
first and every next: a server that accepts the call and never answers ends it with
``UNAVAILABLE`` (it hung ``edgespec draft --mode centralized``, ``bench serve``'s check and
the load's centralized clients forever), while a generation whose chunks each come within
it runs to the end, however long it lasts in all; the chunk marked finished ends it."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
import pytest

from edgespec.core.types import SamplingParams
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec
from edgespec.runtime.wire.codec import pb
from edgespec.runtime.wire.grpc_client import RemoteVerifier

SPEC = SessionSpec("s", "c", (1, 2, 3), SamplingParams(max_new_tokens=4))


def _serve(generate: Any) -> Iterator[str]:
    """A server whose ``Generate`` is ``generate`` and whose ``RunFused`` says nothing until
    the client cancels; its address."""

    def run_fused(request: Any, context: Any) -> Iterator[Any]:
        released = threading.Event()
        context.add_callback(released.set)
        released.wait(30)
        yield from ()

    handlers = {
        "Generate": grpc.unary_stream_rpc_method_handler(
            generate, response_serializer=pb.GenerateChunk.SerializeToString
        ),
        "RunFused": grpc.unary_stream_rpc_method_handler(
            run_fused,
            request_deserializer=pb.FusedRequest.FromString,
            response_serializer=pb.FusedRoundChunk.SerializeToString,
        ),
    }
    server = grpc.server(futures.ThreadPoolExecutor(4))
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("edgespec.v1.Verification", handlers),)
    )
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.stop(grace=0)


@pytest.fixture(params=[0, 2], ids=["first-chunk", "a-later-chunk"])
def silent(request: pytest.FixtureRequest) -> Iterator[str]:
    """Accepts ``Generate``, sends ``request.param`` chunks, then never answers (until the
    client cancels)."""
    released = threading.Event()

    def generate(call: Any, context: Any) -> Iterator[Any]:
        context.add_callback(released.set)
        for token in range(request.param):
            yield pb.GenerateChunk(token_ids=[token])
        released.wait(30)

    yield from _serve(generate)


@pytest.fixture
def slow() -> Iterator[str]:
    """Six chunks, each 0.3 s after the last: 1.8 s in all."""

    def generate(request: Any, context: Any) -> Iterator[Any]:
        for token in range(6):
            time.sleep(0.3)
            yield pb.GenerateChunk(token_ids=[token], finished=token == 5)

    yield from _serve(generate)


def test_a_server_that_stops_answering_ends_the_stream_within_the_timeout(silent: str) -> None:
    client = RemoteVerifier(silent, timeout_s=0.5)
    got: list[tuple[int, ...]] = []
    start = time.monotonic()
    with pytest.raises(RequestError) as info:
        for chunk in client.generate(SPEC):
            got.append(chunk)
            start = time.monotonic()  # the wait for the next chunk starts now
    waited_s = time.monotonic() - start
    assert len(got) in (0, 2)
    assert (info.value.code, info.value.message) == (
        ErrorCode.UNAVAILABLE,
        "Deadline Exceeded: no chunk from the server within 0.5 s: the stream was cancelled",
    )
    assert 0.5 <= waited_s < 2.0
    client.close_channel()


def test_a_slow_generation_whose_chunks_each_come_in_time_is_not_cut(slow: str) -> None:
    """1.8 s in all, over the 0.5 s timeout; no chunk waited for more than 0.3 s."""
    client = RemoteVerifier(slow, timeout_s=0.5)
    assert list(client.generate(SPEC)) == [(0,), (1,), (2,), (3,), (4,), (5,)]
    client.close_channel()


def test_time_the_caller_spends_between_chunks_is_not_counted(slow: str) -> None:
    client = RemoteVerifier(slow, timeout_s=0.5)
    got = []
    for chunk in client.generate(SPEC):
        got.append(chunk)
        time.sleep(0.6)  # over the timeout, on the caller's side
    assert len(got) == 6
    client.close_channel()


def test_a_fused_run_whose_server_stops_answering_ends_within_the_timeout(slow: str) -> None:
    """``RunFused`` streams rounds as ``Generate`` streams chunks: it had no deadline."""
    from edgespec.policies.history_snapshot import HistorySnapshot
    from edgespec.runtime.messages import FusedCall

    client = RemoteVerifier(slow, timeout_s=0.5)
    start = time.monotonic()
    with pytest.raises(RequestError) as info:
        list(client.run_fused(FusedCall("s", 3, 2, HistorySnapshot())))
    assert (info.value.code, info.value.message) == (
        ErrorCode.UNAVAILABLE,
        "Deadline Exceeded: no chunk from the server within 0.5 s: the stream was cancelled",
    )
    assert info.value.past_deadline  # a drafter giving the run up closes its session
    assert 0.5 <= time.monotonic() - start < 2.0
    client.close_channel()


@pytest.fixture
def finished_then_silent() -> Iterator[str]:
    """Two chunks, the second marked finished, then nothing (the stream never ends)."""
    released = threading.Event()

    def generate(call: Any, context: Any) -> Iterator[Any]:
        context.add_callback(released.set)
        yield pb.GenerateChunk(token_ids=[7, 8])
        yield pb.GenerateChunk(token_ids=[9], finished=True)
        released.wait(30)

    yield from _serve(generate)


def test_the_chunk_marked_finished_is_the_last(finished_then_silent: str) -> None:
    """What befalls the stream after it (here a server that never ends it) loses nothing:
    a lost stream is resumed only before its generation finished."""
    client = RemoteVerifier(finished_then_silent, timeout_s=0.5)
    start = time.monotonic()
    assert list(client.generate(SPEC)) == [(7, 8), (9,)]
    assert time.monotonic() - start < 0.5  # the end of the stream was not waited for
    client.close_channel()
