"""Cloud-only fused rounds (``--fused-rounds cloud_only``) on scripted fakes (no model, no
gRPC): one target token per round, recorded as fused with the decision's γ and nothing
drafted; the wasted co-located draft pass of ``--cloud-only-draft-pass``; the setup's
choice of draft and its refusals. Over loopback gRPC: test_cloud_only_serving.py."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from edgespec.config import ConfigError, from_dict
from edgespec.core.types import SamplingParams
from edgespec.policies.batching import FcfsBatching
from edgespec.policies.history_snapshot import HistorySnapshot
from edgespec.policies.interfaces import WindowDecision
from edgespec.runtime.backends.base import DraftProposal
from edgespec.runtime.backends.draft_shaping import DraftShaping
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import FusedCall, FusedRound, SessionSpec
from edgespec.runtime.server.clients import ClientBook
from edgespec.runtime.server.cloud_only import (
    NEEDS_DRAFT,
    cloud_only_decode,
    play_cloud_only_round,
)
from edgespec.runtime.server.config import ServerConfig
from edgespec.runtime.server.fused_run import run_fused_rounds
from edgespec.runtime.server.fused_setup import (
    FusedStart,
    ServerWindow,
    fused_draft_factory,
    start_fused_run,
)
from edgespec.runtime.server.service import VerificationService
from tests.runtime.round_fakes import DRAFT_S, VERIFY_CALL_S, Clock, Drafter, StatefulRecording
from tests.runtime.round_fakes import Verifier as FakeVerifier
from tests.runtime.server.test_fused_setup_checks import _Engine

PROMPT = (1, 2, 3)
NO_DRAFT = "fused rounds need a co-located draft model; this server was started without --draft"


class CountingDrafter(Drafter):
    """Records each pass's context and γ (the round fakes' drafter otherwise)."""

    def __init__(self, clock: Clock) -> None:
        super().__init__(clock)
        self.contexts: list[tuple[int, ...]] = []

    def propose(
        self,
        context: Sequence[int],
        gamma: int,
        temperature: float,
        rng: np.random.Generator,
        shaping: DraftShaping | None = None,
    ) -> DraftProposal:
        self.contexts.append(tuple(context))
        return super().propose(context, gamma, temperature, rng, shaping)


def _run(
    decisions: Sequence[WindowDecision],
    drafter: Drafter | None = None,
    gamma: int = 5,
    max_new_tokens: int = 20,
) -> tuple[list[FusedRound], FakeVerifier, StatefulRecording]:
    clock = Clock()
    verifier = FakeVerifier(clock)
    spec = SessionSpec("s", "dev", PROMPT, SamplingParams(max_new_tokens=max_new_tokens))
    verifier.open(spec)
    policy = StatefulRecording(decisions)
    call = FusedCall("s", len(PROMPT), gamma, HistorySnapshot(num_committed_total=0))
    start = FusedStart(drafter, spec, PROMPT, cloud_only=True)  # type: ignore[arg-type]
    rounds: list[FusedRound] = []
    window = ServerWindow(policy, 64)
    run_fused_rounds(verifier, call, start, window, clock, rounds.append)  # type: ignore[arg-type]
    return rounds, verifier, policy


def test_each_cloud_only_round_commits_the_targets_next_token_and_records_its_gamma() -> None:
    decisions = [WindowDecision(3, True), WindowDecision(7, True), WindowDecision(2, False)]
    rounds, verifier, policy = _run(decisions)
    assert [c.draft_token_ids for c in verifier.calls] == [(), (), ()]  # nothing drafted
    assert [c.prefix_len for c in verifier.calls] == [3, 4, 5]
    assert [(r.gamma, r.draft_token_ids, r.draft_s) for r in rounds] == [
        (5, (), 0.0),
        (3, (), 0.0),
        (7, (), 0.0),
    ]
    assert [r.reply.outcome.committed_token_ids for r in rounds] == [(4,), (5,), (6,)]
    results = [r.reply.outcome.result for r in rounds]
    assert [(x.num_drafted, x.num_accepted) for x in results] == [(0, 0)] * 3
    # the window history: fused, the decision's γ, 0 sent, 0 accepted, 1 committed
    seen = [(o.previous_gamma, o.previous_fused, o.last_num_accepted) for o in policy.seen]
    assert seen == [(5, True, 0), (3, True, 0), (7, True, 0)]
    assert [o.recent_acceptance for o in policy.seen] == [None] * 3  # nothing drafted yet
    end = rounds[-1].end
    assert end is not None and end.next_decision == WindowDecision(2, False)
    snap = end.history
    assert (snap.num_rounds, snap.gamma, snap.fused) == (3, 7, True)
    assert (snap.last_num_accepted, snap.num_committed_total) == (0, 3)


def test_a_cloud_only_run_ends_with_the_request_on_its_last_token() -> None:
    rounds, _, policy = _run([WindowDecision(4, True)] * 10, max_new_tokens=2)
    assert [r.reply.outcome.committed_token_ids for r in rounds] == [(4,), (5,)]
    assert rounds[-1].reply.outcome.finished and rounds[-1].end is not None
    assert rounds[-1].end.next_decision is None and len(policy.seen) == 1


def test_the_draft_pass_runs_one_discarded_co_located_pass_per_round() -> None:
    clock = Clock()
    drafter = CountingDrafter(clock)
    rounds, verifier, _ = _run(
        [WindowDecision(6, True), WindowDecision(2, False)], drafter=drafter, max_new_tokens=20
    )
    assert drafter.gammas == [1, 1]  # one pass per round, one token each ...
    assert drafter.contexts == [(1, 2, 3), (1, 2, 3, 4)]
    assert [c.draft_token_ids for c in verifier.calls] == [(), ()]  # ... never sent
    assert [r.draft_token_ids for r in rounds] == [(), ()]
    assert [r.reply.outcome.committed_token_ids for r in rounds] == [(4,), (5,)]


def test_a_played_round_reports_its_pass_and_its_draft_time() -> None:
    clock = Clock()
    verifier = FakeVerifier(clock)
    spec = SessionSpec("s", "dev", PROMPT, SamplingParams(max_new_tokens=5))
    verifier.open(spec)
    rng = np.random.default_rng(0)
    bare = play_cloud_only_round(verifier, None, "s", PROMPT, spec.sampling, rng, clock)
    assert (bare.num_passes, bare.draft_s, bare.call.draft_s) == (None, 0.0, 0.0)
    assert bare.end_s - bare.start_s == VERIFY_CALL_S
    drafter = CountingDrafter(clock)
    context = (*PROMPT, 4)
    paid = play_cloud_only_round(verifier, drafter, "s", context, spec.sampling, rng, clock)
    assert (paid.num_passes, paid.draft_s, paid.call.draft_s) == (1, DRAFT_S, DRAFT_S)
    assert paid.call.draft_token_ids == () and paid.reply.outcome.committed_token_ids == (5,)


@pytest.mark.parametrize("with_pass", [False, True])
def test_cloud_only_decode_is_the_targets_own_decoding(with_pass: bool) -> None:
    clock = Clock()
    verifier = FakeVerifier(clock)
    spec = SessionSpec("g", "dev", PROMPT, SamplingParams(max_new_tokens=6))
    verifier.open(spec)
    drafter = CountingDrafter(clock) if with_pass else None
    chunks: list[tuple[int, ...]] = []
    cloud_only_decode(verifier, drafter, spec, chunks.append, clock)
    assert chunks == [(4,), (5,), (6,), (7,), (8,), (9,)]
    assert all(c.draft_token_ids == () for c in verifier.calls)
    if drafter is not None:
        assert drafter.gammas == [1] * 6


def test_the_draft_a_fused_round_runs_follows_the_setting() -> None:
    def factory() -> Drafter:
        return Drafter(Clock())

    colocated = ServerConfig()
    cloud = ServerConfig(fused_rounds="cloud_only")
    paid = ServerConfig(fused_rounds="cloud_only", cloud_only_draft_pass=True)
    assert fused_draft_factory(colocated, factory) is factory  # type: ignore[arg-type]
    assert fused_draft_factory(colocated, None) is None  # refused per request
    assert fused_draft_factory(cloud, factory) is None  # type: ignore[arg-type]
    assert fused_draft_factory(paid, factory) is factory  # type: ignore[arg-type]
    with pytest.raises(ConfigError) as info:
        fused_draft_factory(paid, None)
    assert str(info.value) == f"config field 'cloud_only_draft_pass': {NEEDS_DRAFT}"
    assert NEEDS_DRAFT == (
        "--cloud-only-draft-pass runs one co-located draft pass per fused round: it needs "
        "--draft MODEL (or --draft ngram)"
    )


def test_the_draft_pass_needs_cloud_only_rounds() -> None:
    with pytest.raises(ConfigError) as info:
        from_dict(ServerConfig, {"cloud_only_draft_pass": True})
    assert str(info.value) == (
        "config field 'cloud_only_draft_pass': needs fused_rounds cloud_only, got colocated"
    )
    with pytest.raises(ConfigError, match="fused_rounds"):
        from_dict(ServerConfig, {"fused_rounds": "cloud"})


class _SemanticEngine(_Engine):
    def session_rule(self, session_id: str) -> object:  # type: ignore[override]
        return type("Lossy", (), {"lossless": False, "head": None})()


def test_a_cloud_only_run_needs_no_draft_and_takes_semantic_sessions() -> None:
    """Colocated, a server without a draft refuses; cloud-only, it starts a run without
    one, and a lossy session is not asked for draft hidden states (none are read)."""
    call = FusedCall("s", 4, 4, HistorySnapshot())
    with pytest.raises(RequestError) as info:
        start_fused_run(call, "tok", _Engine(), _book(), 4, None)  # type: ignore[arg-type]
    assert (info.value.code, info.value.message) == (ErrorCode.FAILED_PRECONDITION, NO_DRAFT)
    engines: list[Any] = [_Engine(), _SemanticEngine()]
    for engine in engines:
        started = start_fused_run(call, "tok", engine, _book(), 4, None, cloud_only=True)
        assert (started.drafter, started.cloud_only, started.tokens) == (None, True, (*PROMPT, 4))


def _book() -> ClientBook:
    book = ClientBook(ServerConfig())
    book.opened(SessionSpec("s", "dev", PROMPT, SamplingParams()), "tok")
    return book


def test_a_service_with_the_draft_pass_and_no_draft_is_refused() -> None:
    config = ServerConfig(fused_rounds="cloud_only", cloud_only_draft_pass=True)
    with pytest.raises(ConfigError) as info:
        VerificationService(None, config, FcfsBatching())  # type: ignore[arg-type]
    assert info.value.message == NEEDS_DRAFT
