"""SLO-aware serving: the deadline and expected acceptance of every queued verification
(both deadline rules, pinned with an injected clock), WISP batching over loopback gRPC,
and the SLED baseline without a prefix cache (the client-reported timing fields:
test_slo_timing.py)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from edgespec.config import PolicySpec, from_dict
from edgespec.core.types import BatchPlan, PendingVerification, SamplingParams
from edgespec.policies.batching import FcfsBatching
from edgespec.policies.interfaces import BatchingPolicy, BatchLimits
from edgespec.policies.window import StaticWindow
from edgespec.policies.wisp import WispBatching
from edgespec.runtime.backends.ngram import NgramDrafter
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.edge.drafter import DraftOptions, GenerationResult, generate
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyReply
from edgespec.runtime.server.batching import build_batching
from edgespec.runtime.server.config import ServerConfig
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.service import VerificationService
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.conftest import start_server

PROMPT = (3, 1, 4, 1, 5, 9, 2, 6)


class Recording:
    """A batching policy that records every queued verification it is shown (by entry
    id, so an entry shown twice counts once) and lets ``inner`` decide."""

    def __init__(self, inner: BatchingPolicy) -> None:
        self.inner = inner
        self.seen: dict[int, PendingVerification] = {}
        self.batch_sizes: list[int] = []
        self._lock = threading.Lock()

    def select(
        self, queue: Sequence[PendingVerification], now_s: float, limits: BatchLimits
    ) -> BatchPlan:
        plan = self.inner.select(queue, now_s, limits)
        with self._lock:
            self.seen.update({e.entry_id: e for e in queue})
            self.batch_sizes.append(len(plan.entry_ids))
        return plan

    def by_session(self, session_id: str) -> list[PendingVerification]:
        with self._lock:
            entries = [e for e in self.seen.values() if e.session_id == session_id]
        return sorted(entries, key=lambda e: e.entry_id)


# --- the server's deadline and expected acceptance, pinned


@pytest.mark.parametrize("rule", ["pace", "token_speed"])
def test_deadline_and_expected_accepted_of_each_queued_verification(
    target: TransformersTarget, rule: str
) -> None:
    """Session g (16 tok/s) opens at 10 s; round 1 (4 tokens, 2 accepted) arrives at
    10.5 s, round 2 (3 tokens) at 11 s; session t sends a tree of depth 2, b is best effort."""
    config = from_dict(
        ServerConfig,
        {"slo_classes": {"gold": 16.0, "best_effort": None}, "deadline_rule": rule},
    )
    ref = target_greedy_decode(target, PROMPT, 8)
    wrong = (ref[2] + 1) % 64
    now = [10.0]
    policy = Recording(FcfsBatching())

    async def scenario() -> VerifyReply:
        service = VerificationService(
            VerificationEngine(target), config, policy, clock=lambda: now[0]
        )
        sampling = SamplingParams(max_new_tokens=8)
        service.open_session(SessionSpec("g", "x", PROMPT, sampling, "gold"))
        service.open_session(SessionSpec("t", "x", PROMPT, sampling, "gold"))
        service.open_session(SessionSpec("b", "x", PROMPT, sampling, "best_effort"))
        await service.start()
        now[0] = 10.5
        draft = (ref[0], ref[1], wrong, ref[3])
        first = await service.verify(VerifyCall("g", len(PROMPT), draft, draft_s=0.125))
        tree = (ref[0], wrong, ref[1])
        call = VerifyCall("t", len(PROMPT), tree, None, (-1, -1, 0), draft_s=0.25)
        await service.verify(call)
        await service.verify(VerifyCall("b", len(PROMPT), (ref[0],), network_s=0.5))
        now[0] = 11.0
        second = (ref[3], ref[4], ref[5])
        call = VerifyCall("g", len(PROMPT) + 3, second, draft_s=0.0625, network_s=0.25)
        await service.verify(call)
        await service.stop()
        return first

    first = asyncio.run(scenario())
    assert first.outcome.result.num_accepted == 2  # the premise: 2 of 4 accepted
    assert first.outcome.committed_token_ids == ref[:3]
    g1, g2 = policy.by_session("g")
    (t1,) = policy.by_session("t")
    (b1,) = policy.by_session("b")
    # α̂ = (accepted + 0.7·4) / (drafted + 4): 0.7 before any round, (2 + 2.8) / 8 = 0.6 after
    assert (g1.expected_accepted, g2.expected_accepted) == pytest.approx((2.8, 1.8), abs=1e-12)
    assert t1.expected_accepted == pytest.approx(1.4, abs=1e-12)  # a tree counts its depth
    assert b1.expected_accepted == pytest.approx(0.7, abs=1e-12)
    assert (g1.enqueued_s, g2.enqueued_s) == (10.5, 11.0)
    assert b1.deadline_s is None
    if rule == "pace":  # open time + (committed + 1) / 16
        expected = (10.0 + 1 / 16, 10.0 + 4 / 16, 10.0 + 1 / 16)
    else:  # arrival + N̂ᵛ / 16 − draft_s − network_s
        expected = (
            10.5 + 2.8 / 16 - 0.125,
            11.0 + 1.8 / 16 - 0.0625 - 0.25,
            10.5 + 1.4 / 16 - 0.25,
        )
    assert (g1.deadline_s, g2.deadline_s, t1.deadline_s) == pytest.approx(expected, abs=1e-12)
    if rule == "token_speed":
        assert (g1.deadline_s, g2.deadline_s, t1.deadline_s) == pytest.approx(
            (10.55, 10.8, 10.3375), abs=1e-12
        )


# --- WISP over loopback gRPC


def _wisp_profile(tmp_path: Path) -> Path:
    path = tmp_path / "cpu-wisp.yaml"
    path.write_text("kind: wisp\na_s: 2.0e-4\nb_compute_s: 1.0e-7\nb_read_s: 1.0e-6\nc_s: 2.0e-3\n")
    return path


CLASSES = ("gold", "silver", "best_effort")
WISP_PROMPTS = [tuple((5 * i + 3 * j) % 64 for j in range(4 + 3 * i)) for i in range(6)]


def test_wisp_batching_serves_slo_classes_losslessly(
    target: TransformersTarget, draft_model: Any, tmp_path: Path
) -> None:
    spec = PolicySpec("wisp", {"profile": str(_wisp_profile(tmp_path)), "guard_s": 0.001})
    wisp = build_batching(spec)
    assert isinstance(wisp, WispBatching)
    assert (wisp.estimator.a_s, wisp.estimator.c_s, wisp.guard_s) == (2.0e-4, 2.0e-3, 0.001)
    policy = Recording(wisp)
    server = start_server(
        target,
        batching_policy=policy,
        slo_classes={"gold": 40.0, "silver": 10.0, "best_effort": None},
        deadline_rule="token_speed",
    )
    try:
        results = _concurrent(server.port, draft_model, WISP_PROMPTS)
    finally:
        server.stop(grace_s=0)
    for i, (result, prompt) in enumerate(zip(results, WISP_PROMPTS, strict=True)):
        assert isinstance(result, GenerationResult), result
        assert result.output_token_ids == target_greedy_decode(target, prompt, 16), i
    assert max(policy.batch_sizes) > 1  # sessions shared passes
    for i in range(len(WISP_PROMPTS)):
        entries = policy.by_session(f"w{i}")
        rounds = results[i].rounds  # type: ignore[union-attr]
        assert len(entries) == len(rounds)
        assert [e.num_draft_tokens for e in entries] == [r.num_drafted for r in rounds]
        assert all(e.expected_accepted is not None for e in entries)
        if CLASSES[i % 3] == "best_effort":
            assert all(e.deadline_s is None for e in entries)
            continue
        # deadline = arrival + N̂ᵛ / s_c − draft_s − network_s with the client's own times
        target_tps = 40.0 if CLASSES[i % 3] == "gold" else 10.0
        reported = [
            e.enqueued_s + (e.expected_accepted or 0.0) / target_tps - (e.deadline_s or 0.0)
            for e in entries
        ]
        network = [r.uplink_s + r.downlink_s for r in rounds]
        client = [r.draft_s + n for r, n in zip(rounds, [0.0, *network[:-1]], strict=True)]
        assert reported == pytest.approx(client, abs=1e-9)


def _concurrent(port: int, draft_model: Any, prompts: list[tuple[int, ...]]) -> list[Any]:
    results: list[Any] = [None] * len(prompts)
    barrier = threading.Barrier(len(prompts))

    def client(i: int) -> None:
        try:
            drafter = TransformersDraft(draft_model) if i % 2 else NgramDrafter()
            verifier = RemoteVerifier(f"127.0.0.1:{port}")
            barrier.wait()
            results[i] = generate(
                verifier,
                drafter,
                prompts[i],
                SamplingParams(max_new_tokens=16),
                DraftOptions(f"w{i}", f"edge-{i}", CLASSES[i % 3]),
                StaticWindow(2 + i % 3),
            )
        except BaseException as exc:  # surfaced by the caller's assertion
            results[i] = exc

    threads = [threading.Thread(target=client, args=(i,)) for i in range(len(prompts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return results


# --- SLED: no prefix cache


def _one_client(
    target: TransformersTarget, draft_model: Any, prefix_cache: bool
) -> tuple[GenerationResult, Any, list[PendingVerification]]:
    policy = Recording(FcfsBatching())
    server = start_server(target, batching_policy=policy, prefix_cache=prefix_cache)
    try:
        verifier = RemoteVerifier(f"127.0.0.1:{server.port}")
        result = generate(
            verifier,
            TransformersDraft(draft_model),
            PROMPT,
            SamplingParams(max_new_tokens=20),
            DraftOptions("sled"),
            StaticWindow(3),
        )
        stats = verifier.stats()
    finally:
        server.stop(grace_s=0)
    return result, stats, policy.by_session("sled")


def test_without_prefix_cache_every_verification_forwards_the_whole_context(
    target: TransformersTarget, draft_model: Any
) -> None:
    cached, cached_stats, cached_seen = _one_client(target, draft_model, True)
    sled, sled_stats, sled_seen = _one_client(target, draft_model, False)
    reference = target_greedy_decode(target, PROMPT, 20)
    assert cached.output_token_ids == sled.output_token_ids == reference
    rounds = sled.rounds
    assert [r.num_accepted for r in rounds] == [r.num_accepted for r in cached.rounds]
    before = [len(PROMPT) + sum(r.num_committed for r in rounds[:i]) for i in range(len(rounds))]
    whole = [n + r.num_drafted for n, r in zip(before, rounds, strict=True)]
    # SLED: the policy sees no cached tokens, the whole context new; the engine forwards it
    assert [(e.num_new_tokens, e.num_cached_tokens) for e in sled_seen] == [(n, 0) for n in whole]
    assert sled_stats.num_tokens_forwarded == sum(whole)
    assert (sled_stats.num_cache_hits, sled_stats.num_cache_misses) == (0, len(rounds))
    assert sled_stats.num_reprefills == 0
    # with the cache: the prompt once, then the last extra token + the draft per round
    incremental = [whole[0], *(1 + r.num_drafted for r in rounds[1:])]
    assert [e.num_new_tokens for e in cached_seen] == incremental
    assert [e.num_cached_tokens for e in cached_seen] == [0, *(n - 1 for n in before[1:])]
    assert cached_stats.num_tokens_forwarded == sum(incremental)
    assert (cached_stats.num_cache_hits, cached_stats.num_cache_misses) == (len(rounds) - 1, 1)
