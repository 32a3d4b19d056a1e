"""A sampled Verify over Gemma 3's 262,144-token vocabulary, queued behind a busy engine,
holds its draft distribution as sent (a few hundred bytes), not as K x V floats (32 MiB a
call, 8 GiB for 256 queued sessions), through the real gRPC path."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

import grpc

from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.messages import PROTOCOL_VERSION
from edgespec.runtime.wire.codec import pb
from edgespec.runtime.wire.grpc_common import pb_grpc
from tests.runtime.conftest import start_server

GEMMA_VOCAB = 262_144
K = 32


class _WideGatedTarget:
    """The tiny target behind a 262,144-token vocabulary; its forward passes wait at
    ``gate`` and then fail (nothing is verified: the test looks at the queue)."""

    def __init__(self, inner: TransformersTarget) -> None:
        self._inner = inner
        self.vocab_size = GEMMA_VOCAB
        self.entered = threading.Event()
        self.gate = threading.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def forward(self, items: Any) -> Any:
        self.entered.set()
        assert self.gate.wait(30)
        raise RuntimeError("not run")


def _open(stub: Any, session_id: str, temperature: float) -> None:
    sampling = pb.Sampling(temperature=temperature, max_new_tokens=8)
    stub.OpenSession(
        pb.OpenSessionRequest(
            protocol_version=PROTOCOL_VERSION,
            session_id=session_id,
            client_id="c",
            prompt_token_ids=[1, 2, 3],
            sampling=sampling,
        ),
        timeout=10,
    )


def _in_background(fn: Callable[[], Any]) -> threading.Thread:
    def run() -> None:
        with contextlib.suppress(grpc.RpcError):  # the gated passes fail: the queue is looked at
            fn()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_a_queued_sampled_call_holds_its_q_as_sent(target: TransformersTarget) -> None:
    backend = _WideGatedTarget(target)
    server = start_server(backend)  # type: ignore[arg-type]
    assert server.service is not None
    queue = server.service._scheduler.queue  # the admitted calls waiting for the engine
    threads: list[threading.Thread] = []
    try:
        stub = pb_grpc.VerificationStub(grpc.insecure_channel(f"127.0.0.1:{server.port}"))
        _open(stub, "busy", 0.0)
        _open(stub, "sampled", 1.0)
        busy = pb.VerifyRequest(session_id="busy", prefix_len=3)
        threads.append(_in_background(lambda: stub.Verify(busy, timeout=30)))
        assert backend.entered.wait(10)  # the engine is busy with "busy"
        request = pb.VerifyRequest(
            session_id="sampled",
            prefix_len=3,
            draft_token_ids=[1] * K,
            draft_support_sizes=[1] * K,
            draft_support_ids=[1] * K,
            draft_probs=[1.0] * K,
        )
        threads.append(_in_background(lambda: stub.Verify(request, timeout=30)))
        deadline = time.monotonic() + 10
        while not queue and time.monotonic() < deadline:
            time.sleep(0.01)
        (entry,) = list(queue.values())
        held = entry.call.draft_probs
    finally:
        backend.gate.set()
        server.stop(grace_s=0)
        for thread in threads:
            thread.join(10)
    assert entry.call.session_id == "sampled" and held is not None
    assert held.shape == (K, GEMMA_VOCAB)
    assert held.nbytes <= 4 * request.ByteSize(), f"{held.nbytes} bytes held"
