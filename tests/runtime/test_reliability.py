"""Bad cases: malformed requests, auth, TLS, idle clients, restarts, resource limits."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest

from edgespec.config import from_dict
from edgespec.core.types import SamplingParams
from edgespec.policies.batching import FcfsBatching
from edgespec.policies.interfaces import WindowDecision
from edgespec.runtime.backends.ngram import NgramDrafter
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.codec import pb
from edgespec.runtime.drafter import DraftOptions, generate
from edgespec.runtime.engine import VerificationEngine
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.grpc_client import RemoteVerifier
from edgespec.runtime.grpc_common import pb_grpc
from edgespec.runtime.inprocess import target_greedy_decode
from edgespec.runtime.messages import SessionSpec, VerifyCall
from edgespec.runtime.server import VerificationService
from edgespec.runtime.serving_config import ServerConfig
from tests.runtime.conftest import ServerFactory

PROMPT = (3, 1, 4, 1, 5, 9, 2, 6)
GREEDY = SamplingParams(max_new_tokens=20)


def _raises(code: ErrorCode, message: str, fn: Any, *args: Any) -> None:
    with pytest.raises(RequestError) as info:
        fn(*args)
    assert (info.value.code, info.value.message) == (code, message)


def test_malformed_requests_are_rejected_and_others_still_served(
    make_server: ServerFactory, target: TransformersTarget
) -> None:
    server = make_server(max_draft_tokens=8)
    bad = RemoteVerifier(f"127.0.0.1:{server.port}")
    bad.open(SessionSpec("bad", "evil", PROMPT, GREEDY))
    n = len(PROMPT)
    invalid = ErrorCode.INVALID_ARGUMENT
    cases = [
        (
            VerifyCall("bad", n, (1, 999)),
            invalid,
            "draft token 1 (id 999) is outside the vocabulary [0, 64)",
        ),
        (VerifyCall("bad", n, (1,) * 9), invalid, "draft block has 9 tokens; the limit is 8"),
        (
            VerifyCall("bad", n + 3, (1,)),
            invalid,
            "prefix_len 11 does not match session 'bad', which has 8 committed tokens",
        ),
        (VerifyCall("ghost", n, (1,)), ErrorCode.NOT_FOUND, "unknown session 'ghost'"),
    ]
    for call, code, message in cases:
        _raises(code, message, bad.verify, call)
    _raises(
        invalid,
        "prompt token 0 (id 64) is outside the vocabulary [0, 64)",
        bad.open,
        SessionSpec("bad2", "evil", (64,), GREEDY),
    )
    _raises(
        invalid, "session 'bad' already exists", bad.open, SessionSpec("bad", "e", PROMPT, GREEDY)
    )
    _raises(invalid, "stochastic verification needs draft_probs", _stochastic_without_probs, bad)
    # the server keeps serving a well-behaved client, losslessly
    good = generate(
        RemoteVerifier(f"127.0.0.1:{server.port}"),
        NgramDrafter(),
        PROMPT,
        GREEDY,
        DraftOptions(session_id="good"),
    )
    assert good.output_token_ids == target_greedy_decode(target, PROMPT, 20)
    assert bad.stats().num_rejected == 7


def _stochastic_without_probs(verifier: RemoteVerifier) -> None:
    verifier.open(SessionSpec("sto", "x", PROMPT, SamplingParams(temperature=1.0, seed=1)))
    verifier.verify(VerifyCall("sto", len(PROMPT), (1, 2)))


def test_auth_tokens(make_server: ServerFactory) -> None:
    server = make_server(auth_tokens=["alpha-secret", "beta-secret"])
    address = f"127.0.0.1:{server.port}"
    spec = SessionSpec("a", "x", PROMPT, GREEDY)
    _raises(ErrorCode.UNAUTHENTICATED, "missing auth token", RemoteVerifier(address).open, spec)
    _raises(
        ErrorCode.UNAUTHENTICATED,
        "invalid auth token",
        RemoteVerifier(address, auth_token="wrong").open,
        spec,
    )
    _raises(ErrorCode.UNAUTHENTICATED, "missing auth token", RemoteVerifier(address).stats)
    for token in ("alpha-secret", "beta-secret"):  # per-client tokens
        verifier = RemoteVerifier(address, auth_token=token)
        result = generate(verifier, NgramDrafter(), PROMPT, GREEDY, DraftOptions(f"s-{token}"))
        assert len(result.output_token_ids) == 20
    stub = pb_grpc.VerificationStub(grpc.insecure_channel(address))
    with pytest.raises(grpc.RpcError) as info:  # the token without its scheme
        stub.Stats(pb.StatsRequest(), metadata=(("authorization", "alpha-secret"),))
    assert (info.value.code(), info.value.details()) == (
        grpc.StatusCode.UNAUTHENTICATED,
        "authorization metadata must be 'Bearer <token>'",
    )


def test_an_empty_auth_token_is_a_config_error_not_open_access() -> None:
    from edgespec.config import ConfigError

    with pytest.raises(ConfigError, match=r"auth_tokens\[0\].*is empty"):
        from_dict(ServerConfig, {"auth_tokens": [""]})


def test_sessions_belong_to_the_client_that_opened_them(
    make_server: ServerFactory, target: TransformersTarget
) -> None:
    server = make_server(auth_tokens=["alpha-secret", "beta-secret"])
    address = f"127.0.0.1:{server.port}"
    alice = RemoteVerifier(address, auth_token="alpha-secret")
    mallory = RemoteVerifier(address, auth_token="beta-secret")
    denied = "session 'a' belongs to another client"

    class Interfering:
        """Alice's verifier; before each of her rounds Mallory tries her session."""

        def open(self, spec: SessionSpec) -> None:
            alice.open(spec)

        def verify(self, call: VerifyCall) -> Any:
            _raises(ErrorCode.PERMISSION_DENIED, denied, mallory.verify, call)
            _raises(ErrorCode.PERMISSION_DENIED, denied, mallory.close, call.session_id)
            return alice.verify(call)

        def close(self, session_id: str) -> None:
            alice.close(session_id)

    result = generate(Interfering(), NgramDrafter(), PROMPT, GREEDY, DraftOptions("a"))
    assert result.output_token_ids == target_greedy_decode(target, PROMPT, 20)


def _self_signed(tmp_path: Path) -> tuple[Path, Path]:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    try:
        from cryptography import x509  # noqa: F401
    except ImportError:
        if shutil.which("openssl") is None:
            pytest.skip(
                "TLS test needs the `cryptography` package or the openssl CLI; neither found"
            )
        subprocess.run(
            [
                "openssl",
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "1",
                "-subj",
                "/CN=localhost",
                "-addext",
                "subjectAltName=DNS:localhost,IP:127.0.0.1",
                "-keyout",
                str(key),
                "-out",
                str(cert),
            ],
            check=True,
            capture_output=True,
        )
        return cert, key
    return _cryptography_cert(cert, key)


def _cryptography_cert(cert_path: Path, key_path: Path) -> tuple[Path, Path]:
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def test_tls(make_server: ServerFactory, tmp_path: Path, target: TransformersTarget) -> None:
    cert, key = _self_signed(tmp_path)
    server = make_server(tls_cert=str(cert), tls_key=str(key))
    address = f"127.0.0.1:{server.port}"
    secure = RemoteVerifier(address, tls_ca=str(cert), tls_server_name="localhost", timeout_s=5)
    result = generate(secure, NgramDrafter(), PROMPT, GREEDY, DraftOptions("tls"))
    assert result.output_token_ids == target_greedy_decode(target, PROMPT, 20)
    plaintext = RemoteVerifier(address, timeout_s=2)
    with pytest.raises(RequestError) as info:
        plaintext.health()
    assert info.value.code is ErrorCode.UNAVAILABLE


def test_idle_client_kv_is_freed(make_server: ServerFactory) -> None:
    server = make_server(session_timeout_s=0.2)
    verifier = RemoteVerifier(f"127.0.0.1:{server.port}")
    verifier.open(SessionSpec("idle", "gone", PROMPT, GREEDY))
    verifier.verify(VerifyCall("idle", len(PROMPT), (1, 2, 3)))
    assert verifier.stats().num_cached_tokens > 0
    deadline = time.monotonic() + 5
    while verifier.stats().num_sessions and time.monotonic() < deadline:
        time.sleep(0.05)
    stats = verifier.stats()
    assert (stats.num_sessions, stats.num_cached_tokens, stats.num_expired_sessions) == (0, 0, 1)
    _raises(
        ErrorCode.NOT_FOUND,
        "unknown session 'idle'",
        verifier.verify,
        VerifyCall("idle", len(PROMPT) + 1, (1,)),
    )


def test_server_restart_mid_generation(
    make_server: ServerFactory, target: TransformersTarget, draft_model: Any
) -> None:
    first = make_server()
    port = first.port
    restarted: list[Any] = []
    chunks: list[tuple[int, ...]] = []

    def on_tokens(tokens: tuple[int, ...]) -> None:
        chunks.append(tokens)
        if len(chunks) == 3:  # kill the server after the third round, start a new one
            first.stop(grace_s=0)
            restarted.append(make_server(port=port))

    sampling = SamplingParams(max_new_tokens=30)
    result = generate(
        RemoteVerifier(f"127.0.0.1:{port}"),
        TransformersDraft(draft_model),
        PROMPT,
        sampling,
        DraftOptions("restart"),
        on_tokens=on_tokens,
    )
    assert restarted and result.num_reconnects >= 1
    assert result.output_token_ids == target_greedy_decode(target, PROMPT, 30)
    # the new server only ever saw the reopened session: prompt + committed tokens so far
    assert RemoteVerifier(f"127.0.0.1:{port}").stats().num_cache_misses == 1


def test_session_and_message_limits(make_server: ServerFactory) -> None:
    server = make_server(max_sessions=2, max_message_bytes=2048)
    verifier = RemoteVerifier(f"127.0.0.1:{server.port}")
    verifier.open(SessionSpec("a", "x", PROMPT, GREEDY))
    verifier.open(SessionSpec("b", "x", PROMPT, GREEDY))
    _raises(
        ErrorCode.RESOURCE_EXHAUSTED,
        "session limit reached (2 open sessions)",
        verifier.open,
        SessionSpec("c", "x", PROMPT, GREEDY),
    )
    verifier.close("a")
    verifier.open(SessionSpec("c", "x", PROMPT, GREEDY))
    huge = VerifyCall("c", len(PROMPT), (1,) * 4, np.full((4, 200), 0.005, np.float32))
    with pytest.raises(RequestError) as info:
        verifier.verify(huge)
    assert info.value.code is ErrorCode.RESOURCE_EXHAUSTED
    assert "Received message larger than max" in info.value.message
    assert verifier.health()  # still up
    assert grpc.StatusCode.RESOURCE_EXHAUSTED.name == "RESOURCE_EXHAUSTED"
    assert pb.MODE_FUSED == 1


def test_queue_depth_limit(target: TransformersTarget) -> None:
    config = from_dict(ServerConfig, {"max_queue_depth": 1})

    async def scenario() -> list[Any]:
        service = VerificationService(VerificationEngine(target), config, FcfsBatching())
        await service.start()
        for sid in ("a", "b"):
            service.open_session(SessionSpec(sid, "x", PROMPT, GREEDY))
        calls = [service.verify(VerifyCall(sid, len(PROMPT), (1, 2))) for sid in ("a", "b")]
        results = await asyncio.gather(*calls, return_exceptions=True)
        again = await service.verify(VerifyCall("b", len(PROMPT), (1, 2)))  # drained: accepted
        await service.stop()
        return [*results, again]

    first, second, again = asyncio.run(scenario())
    assert first.outcome.result.num_drafted == 2
    assert isinstance(second, RequestError)
    assert (second.code, second.message) == (
        ErrorCode.RESOURCE_EXHAUSTED,
        "verification queue is full (1 waiting)",
    )
    assert again.outcome.result.num_drafted == 2


def test_protocol_version_mismatch(make_server: ServerFactory) -> None:
    server = make_server()
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    stub = pb_grpc.VerificationStub(channel)
    request = pb.OpenSessionRequest(
        protocol_version=99,
        session_id="v",
        prompt_token_ids=[1],
        sampling=pb.Sampling(max_new_tokens=4),
    )
    with pytest.raises(grpc.RpcError) as info:
        stub.OpenSession(request)
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert info.value.details() == "protocol version 99 not supported; server speaks 1"


def test_cancelled_verification_does_not_advance_the_session(target: TransformersTarget) -> None:
    config = from_dict(ServerConfig, {})

    async def scenario() -> tuple[int, int, int]:
        service = VerificationService(VerificationEngine(target), config, FcfsBatching())
        service.open_session(SessionSpec("a", "x", PROMPT, GREEDY))
        task = asyncio.create_task(service.verify(VerifyCall("a", len(PROMPT), (1, 2))))
        await asyncio.sleep(0)  # enqueued, scheduler not started yet
        depth = service.stats().queue_depth
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await service.start()
        reply = await service.verify(VerifyCall("a", len(PROMPT), (1, 2)))  # same prefix: valid
        await service.stop()
        return depth, service.stats().queue_depth, reply.batch_size

    assert asyncio.run(scenario()) == (1, 0, 1)


def test_context_limit(target: TransformersTarget) -> None:
    engine = VerificationEngine(target)
    assert target.max_context_tokens == 4096
    spec = SessionSpec("long", "x", (1,) * 4000, SamplingParams(max_new_tokens=100))
    _raises(
        ErrorCode.INVALID_ARGUMENT,
        "prompt (4000 tokens) + max_new_tokens (100) exceeds the target's context of 4096",
        engine.open_session,
        spec,
    )


class _PoisonedBackend:
    """The real target, except that any forward pass containing token 13 raises."""

    def __init__(self, inner: TransformersTarget) -> None:
        self._inner = inner
        self.vocab_size = inner.vocab_size
        self.eos_token_ids = inner.eos_token_ids
        self.max_context_tokens = inner.max_context_tokens
        self.crop = inner.crop
        self.gather = inner.gather
        self.kv_bytes = inner.kv_bytes
        self.num_calls = 0

    def forward(self, items: Any) -> Any:
        self.num_calls += 1
        if any(13 in item.new_token_ids for item in items):
            raise RuntimeError("poisoned token 13")
        return self._inner.forward(items)


def test_backend_failure_fails_only_the_culprit(target: TransformersTarget) -> None:
    backend = _PoisonedBackend(target)
    config = from_dict(ServerConfig, {})

    async def scenario() -> list[Any]:
        service = VerificationService(VerificationEngine(backend), config, FcfsBatching())
        for sid in ("a", "b", "c"):
            service.open_session(SessionSpec(sid, "x", PROMPT, GREEDY))
        drafts = {"a": (1, 2), "b": (13, 2), "c": (3,)}
        calls = [service.verify(VerifyCall(s, len(PROMPT), d)) for s, d in drafts.items()]
        tasks = [asyncio.ensure_future(c) for c in calls]
        await asyncio.sleep(0)  # all three queued before the scheduler starts
        await service.start()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        after = await service.verify(VerifyCall("b", len(PROMPT), (4,)))  # "b" still usable
        await service.stop()
        return [*results, after]

    a, b, c, after = asyncio.run(scenario())
    assert a.outcome.result.num_drafted == 2 and c.outcome.result.num_drafted == 1
    assert isinstance(b, RequestError) and b.code is ErrorCode.INTERNAL
    assert b.message == (
        "verification failed in the target backend: RuntimeError('poisoned token 13')"
    )
    assert after.outcome.result.num_drafted == 1
    assert backend.num_calls == 5  # the failed batch of 3, a, b, c one by one, then "after"


class _BrokenBatching:
    """FCFS, except that a queue holding session ``bad`` gets ``answer`` instead."""

    def __init__(self, answer: str) -> None:
        self.answer = answer

    def select(self, queue: Any, now_s: float, limits: Any) -> Any:
        from edgespec.core.types import BatchPlan

        if not any(e.session_id == "bad" for e in queue):
            return FcfsBatching().select(queue, now_s, limits)
        if self.answer == "raise":
            raise ValueError("policy bug")
        if self.answer == "empty":
            return BatchPlan(())
        return BatchPlan((999,))


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (
            "unknown",
            "batching policy _BrokenBatching chose entry ids [999] that are not in the queue",
        ),
        ("raise", "batching policy _BrokenBatching raised ValueError('policy bug')"),
        (
            "empty",
            "batching policy _BrokenBatching returned an empty plan although limits.force is set",
        ),
    ],
)
def test_a_broken_batching_policy_fails_its_calls_and_the_server_keeps_serving(
    target: TransformersTarget, answer: str, message: str
) -> None:
    config = from_dict(ServerConfig, {})

    async def scenario() -> tuple[Any, Any, Any]:
        service = VerificationService(VerificationEngine(target), config, _BrokenBatching(answer))
        await service.start()
        for sid in ("bad", "good"):
            service.open_session(SessionSpec(sid, "x", PROMPT, GREEDY))
        bad = await asyncio.wait_for(
            asyncio.gather(
                service.verify(VerifyCall("bad", len(PROMPT), (1,))), return_exceptions=True
            ),
            timeout=10,
        )
        good = await asyncio.wait_for(service.verify(VerifyCall("good", len(PROMPT), (1,))), 10)
        again = await asyncio.wait_for(
            service.verify(
                VerifyCall("good", len(PROMPT) + good.outcome.result.num_accepted + 1, (2,))
            ),
            10,
        )
        await service.stop()
        return bad[0], good, again

    bad, good, again = asyncio.run(scenario())
    assert isinstance(bad, RequestError)
    assert (bad.code, bad.message) == (ErrorCode.INTERNAL, message)
    assert good.outcome.result.num_drafted == 1 and again.outcome.result.num_drafted == 1


def test_a_broken_batching_policy_over_grpc_gives_internal(target: TransformersTarget) -> None:
    from tests.runtime.conftest import start_server

    server = start_server(target, batching_policy=_BrokenBatching("unknown"))
    try:
        verifier = RemoteVerifier(f"127.0.0.1:{server.port}")
        verifier.open(SessionSpec("bad", "x", PROMPT, GREEDY))
        _raises(
            ErrorCode.INTERNAL,
            "batching policy _BrokenBatching chose entry ids [999] that are not in the queue",
            verifier.verify,
            VerifyCall("bad", len(PROMPT), (1,)),
        )
        result = generate(verifier, NgramDrafter(), PROMPT, GREEDY, DraftOptions(session_id="ok"))
        assert result.output_token_ids == target_greedy_decode(target, PROMPT, 20)
    finally:
        server.stop(grace_s=0)


def test_a_window_policy_answering_zero_is_an_error_not_a_silent_clamp(
    target: TransformersTarget,
) -> None:
    from edgespec.policies.contracts import PolicyContractError
    from edgespec.runtime.inprocess import speculative_generate

    class ZeroWindow:
        def next_window(self, obs: Any) -> WindowDecision:
            return WindowDecision(0)

    with pytest.raises(PolicyContractError) as info:
        speculative_generate(target, NgramDrafter(), PROMPT, ZeroWindow(), GREEDY)
    assert str(info.value) == (
        "window policy ZeroWindow returned WindowDecision(gamma=0, fused=False); "
        "expected WindowDecision(gamma=<integer >= 1>, fused=<bool>)"
    )


class _WaitUnlessForced:
    """Dispatches only under force, and records the force flag of every call."""

    def __init__(self) -> None:
        self.forced: list[bool] = []

    def select(self, queue: Any, now_s: float, limits: Any) -> Any:
        from edgespec.core.types import BatchPlan

        self.forced.append(limits.force)
        return FcfsBatching().select(queue, now_s, limits) if limits.force else BatchPlan(())


def test_force_means_every_live_session_is_queued(target: TransformersTarget) -> None:
    config = from_dict(ServerConfig, {})

    async def scenario(num_queued: int) -> list[bool]:
        policy = _WaitUnlessForced()
        service = VerificationService(VerificationEngine(target), config, policy, batch_wait_s=0.05)
        for sid in ("a", "b"):
            service.open_session(SessionSpec(sid, "x", PROMPT, GREEDY))
        calls = [service.verify(VerifyCall(s, len(PROMPT), (1,))) for s in "ab"[:num_queued]]
        tasks = [asyncio.ensure_future(c) for c in calls]
        await asyncio.sleep(0)  # queued before the scheduler starts
        await service.start()
        await asyncio.wait_for(asyncio.gather(*tasks), timeout=10)
        await service.stop()
        return policy.forced

    assert asyncio.run(scenario(2))[0] is True  # both live sessions queued: force at once
    # one of two queued: the policy may wait; the valve forces it after batch_wait_s
    assert asyncio.run(scenario(1))[:2] == [False, True]


def test_pending_verifications_carry_the_pace_deadline_of_their_slo_class(
    target: TransformersTarget,
) -> None:
    config = from_dict(ServerConfig, {"slo_classes": {"gold": 10.0, "best_effort": None}})
    now = [100.0]

    class Recording:
        def __init__(self) -> None:
            self.seen: dict[str, float | None] = {}

        def select(self, queue: Any, now_s: float, limits: Any) -> Any:
            self.seen.update({e.session_id: e.deadline_s for e in queue})
            return FcfsBatching().select(queue, now_s, limits)

    policy = Recording()

    async def scenario() -> None:
        service = VerificationService(
            VerificationEngine(target), config, policy, clock=lambda: now[0]
        )
        service.open_session(
            SessionSpec("g", "x", PROMPT, SamplingParams(max_new_tokens=20), "gold")
        )
        service.open_session(
            SessionSpec("b", "x", PROMPT, SamplingParams(max_new_tokens=20), "best_effort")
        )
        with pytest.raises(RequestError) as info:
            service.open_session(
                SessionSpec("s", "x", PROMPT, SamplingParams(max_new_tokens=20), "silver")
            )
        assert info.value.message == (
            "unknown slo_class 'silver'; this server has ['best_effort', 'gold']"
        )
        await service.start()
        now[0] = 101.0
        first = await service.verify(VerifyCall("g", len(PROMPT), (1, 2)))
        await service.verify(VerifyCall("b", len(PROMPT), (1,)))
        committed = len(first.outcome.committed_token_ids)
        await service.verify(VerifyCall("g", len(PROMPT) + committed, (3,)))
        await service.stop()
        # the last verification of g: opened at 100 s, `committed` tokens so far
        assert policy.seen["g"] == pytest.approx(100.0 + (committed + 1) / 10.0)
        assert policy.seen["b"] is None

    asyncio.run(scenario())


class _FlakyVerifier:
    """Fails the verifications numbered in ``fail_at`` with UNAVAILABLE (before they
    reach the server), passing everything else to ``inner``."""

    def __init__(self, inner: Any, fail_at: set[int]) -> None:
        self.inner, self.fail_at, self.calls = inner, fail_at, 0
        self.opened: list[str] = []

    def open(self, spec: SessionSpec) -> None:
        self.opened.append(spec.session_id)
        self.inner.open(spec)

    def verify(self, call: VerifyCall) -> Any:
        self.calls += 1
        if self.calls in self.fail_at:
            raise RequestError(ErrorCode.UNAVAILABLE, "network blip")
        return self.inner.verify(call)

    def close(self, session_id: str) -> None:
        self.inner.close(session_id)


def test_reconnects_in_a_row_get_new_sessions_and_close_the_abandoned_ones(
    target: TransformersTarget,
) -> None:
    from edgespec.runtime.inprocess import LocalVerifier

    engine = VerificationEngine(target)
    flaky = _FlakyVerifier(LocalVerifier(engine), fail_at={2, 3, 4})  # no progress between
    result = generate(flaky, NgramDrafter(), PROMPT, GREEDY, DraftOptions(session_id="s"))
    assert result.output_token_ids == target_greedy_decode(target, PROMPT, 20)
    assert result.num_reconnects == 3
    assert flaky.opened == ["s", "s#r1.1", "s#r2.1", "s#r3.1"]
    assert engine.counters().num_sessions == 0  # the abandoned sessions were closed


@pytest.mark.parametrize(
    ("temperature", "top_p", "message"),
    [
        (float("nan"), 1.0, "sampling: temperature must be finite and >= 0, got nan"),
        (float("inf"), 1.0, "sampling: temperature must be finite and >= 0, got inf"),
        (0.7, -0.5, "sampling: top_p must be in (0, 1], got -0.5"),
        (0.7, float("nan"), "sampling: top_p must be in (0, 1], got nan"),
    ],
)
def test_sampling_inputs_are_validated_over_the_wire(
    make_server: ServerFactory, temperature: float, top_p: float, message: str
) -> None:
    server = make_server()
    stub = pb_grpc.VerificationStub(grpc.insecure_channel(f"127.0.0.1:{server.port}"))
    sampling = pb.Sampling(temperature=temperature, top_p=top_p, max_new_tokens=4)
    request = pb.OpenSessionRequest(
        protocol_version=1, session_id="t", prompt_token_ids=[1, 2], sampling=sampling
    )
    with pytest.raises(grpc.RpcError) as info:
        stub.OpenSession(request)
    assert (info.value.code(), info.value.details()) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        message,
    )


@pytest.mark.parametrize("row_sum", [64.0, 6e-29, 2e40])
def test_draft_distributions_must_sum_to_one(make_server: ServerFactory, row_sum: float) -> None:
    server = make_server()
    verifier = RemoteVerifier(f"127.0.0.1:{server.port}")
    sampled = SamplingParams(temperature=0.8, max_new_tokens=8, seed=1)
    verifier.open(SessionSpec("p", "x", PROMPT, sampled))
    probs = np.full((1, 64), row_sum / 64, dtype=np.float32)
    total = float(probs.sum(dtype=np.float64))
    _raises(
        ErrorCode.INVALID_ARGUMENT,
        f"draft_probs row 0 sums to {total:.6g}; a distribution sums to 1 (within 0.001)",
        verifier.verify,
        VerifyCall("p", len(PROMPT), (3,), probs),
    )


def test_identifiers_have_a_length_limit(make_server: ServerFactory) -> None:
    server = make_server()
    verifier = RemoteVerifier(f"127.0.0.1:{server.port}")
    huge = "x" * 100_000
    message = "session_id is 100000 characters; the limit is 128"
    _raises(ErrorCode.INVALID_ARGUMENT, message, verifier.verify, VerifyCall(huge, 1, (1,)))
    spec = SessionSpec("ok", "c" * 129, PROMPT, GREEDY)
    _raises(
        ErrorCode.INVALID_ARGUMENT,
        "client_id is 129 characters; the limit is 128",
        verifier.open,
        spec,
    )


def test_tls_mistakes_name_the_files(tmp_path: Path) -> None:
    from edgespec.config import ConfigError
    from edgespec.runtime.serving_config import check_tls_pair

    cert, key = _self_signed(tmp_path)
    check_tls_pair(str(cert), str(key))  # the right pair passes
    (other := tmp_path / "other").mkdir()
    _, other_key = _self_signed(other)
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n")
    for bad_cert, bad_key in ((garbage, key), (key, cert), (cert, other_key)):
        with pytest.raises(ConfigError) as info:
            check_tls_pair(str(bad_cert), str(bad_key))
        assert f"tls_cert {bad_cert} and tls_key {bad_key} are not a PEM certificate" in str(
            info.value
        )
    with pytest.raises(ConfigError, match="missing.pem does not exist"):
        check_tls_pair(str(tmp_path / "missing.pem"), str(key))
    from edgespec.cli import main

    # edgespec serve says so before loading any model, and exits 2
    args = ["serve", "--target", "no-such-model", "--tls-cert", str(garbage)]
    assert main([*args, "--tls-key", str(key)]) == 2


def test_one_client_cannot_take_every_session(make_server: ServerFactory) -> None:
    server = make_server(max_sessions=10, max_sessions_per_client=2)
    verifier = RemoteVerifier(f"127.0.0.1:{server.port}")
    for i in range(2):
        verifier.open(SessionSpec(f"greedy{i}", "hog", PROMPT, GREEDY))
    _raises(
        ErrorCode.RESOURCE_EXHAUSTED,
        "client_id 'hog' already has 2 open sessions (max_sessions_per_client)",
        verifier.open,
        SessionSpec("greedy2", "hog", PROMPT, GREEDY),
    )
    verifier.open(SessionSpec("polite", "other", PROMPT, GREEDY))  # others still get in
    verifier.close("greedy0")
    verifier.open(SessionSpec("greedy3", "hog", PROMPT, GREEDY))  # a closed slot is free


def test_fuzzed_requests_get_clear_codes_and_the_server_keeps_serving(
    make_server: ServerFactory, target: TransformersTarget
) -> None:
    """Seeded fuzz: random bytes and byte-flipped valid messages to every unary method."""
    server = make_server()
    address = f"127.0.0.1:{server.port}"
    channel = grpc.insecure_channel(address)
    rng = np.random.default_rng(0)
    valid = {
        "OpenSession": pb.OpenSessionRequest(
            protocol_version=1, session_id="f", prompt_token_ids=[1, 2, 3],
            sampling=pb.Sampling(max_new_tokens=4),
        ).SerializeToString(),
        "Verify": pb.VerifyRequest(
            session_id="f", prefix_len=3, draft_token_ids=[4, 5]
        ).SerializeToString(),
        "CloseSession": pb.CloseSessionRequest(session_id="f").SerializeToString(),
        "Stats": b"",
        "Health": b"",
    }  # fmt: skip
    allowed = {
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.FAILED_PRECONDITION,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
    }
    undecodable = 0
    for i in range(150):
        method = list(valid)[i % len(valid)]
        data = bytearray(valid[method] or rng.bytes(8))
        if i % 3 == 0:
            data = bytearray(rng.bytes(int(rng.integers(1, 40))))
        else:
            for _ in range(int(rng.integers(1, 4))):
                data[int(rng.integers(len(data)))] = int(rng.integers(256))
        call = channel.unary_unary(f"/edgespec.v1.Verification/{method}")
        try:
            call(bytes(data), timeout=5)
        except grpc.RpcError as exc:
            assert exc.code() in allowed, (method, bytes(data), exc.code(), exc.details())
            undecodable += "undecodable" in (exc.details() or "")
    assert undecodable > 0  # some bytes did not parse, and said so
    verifier = RemoteVerifier(address)
    result = generate(verifier, NgramDrafter(), PROMPT, GREEDY, DraftOptions("after-fuzz"))
    assert result.output_token_ids == target_greedy_decode(target, PROMPT, 20)


def test_health_can_require_auth(make_server: ServerFactory) -> None:
    server = make_server(auth_tokens=["alpha-secret"], health_requires_auth=True)
    address = f"127.0.0.1:{server.port}"
    _raises(ErrorCode.UNAUTHENTICATED, "missing auth token", RemoteVerifier(address).health)
    assert RemoteVerifier(address, auth_token="alpha-secret").health()
    open_server = make_server(auth_tokens=["alpha-secret"])  # the default: Health is public
    assert RemoteVerifier(f"127.0.0.1:{open_server.port}").health()
