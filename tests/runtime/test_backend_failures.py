"""Failures inside the server and its policies: a backend exception, a broken batching
or window policy, forced batches, SLO deadlines, and clients that reconnect."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from edgespec.config import from_dict
from edgespec.core.types import SamplingParams
from edgespec.policies.batching import FcfsBatching
from edgespec.policies.interfaces import WindowDecision
from edgespec.runtime.backends.ngram import NgramDrafter
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.edge.drafter import DraftOptions, generate
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec, VerifyCall
from edgespec.runtime.server.config import ServerConfig
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.service import VerificationService
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.bad_cases import GREEDY, PROMPT, raises_request_error
from tests.runtime.wrapped_target import WrappedTarget


class _PoisonedBackend(WrappedTarget):
    """The real target, except that any forward pass containing token 13 raises."""

    def __init__(self, inner: TransformersTarget) -> None:
        super().__init__(inner)
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
        raises_request_error(
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
    from edgespec.runtime.wire.inprocess import speculative_generate

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
    from edgespec.runtime.wire.inprocess import LocalVerifier

    engine = VerificationEngine(target)
    flaky = _FlakyVerifier(LocalVerifier(engine), fail_at={2, 3, 4})  # no progress between
    result = generate(flaky, NgramDrafter(), PROMPT, GREEDY, DraftOptions(session_id="s"))
    assert result.output_token_ids == target_greedy_decode(target, PROMPT, 20)
    assert result.num_reconnects == 3
    assert flaky.opened == ["s", "s#r1.1", "s#r2.1", "s#r3.1"]
    assert engine.counters().num_sessions == 0  # the abandoned sessions were closed
