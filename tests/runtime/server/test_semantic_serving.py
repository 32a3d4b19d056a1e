"""Semantic (lossy, WISV) verification end to end over loopback gRPC with the tiny models:
threshold 0 is exact greedy SD, a head that never rejects takes the draft's own tokens,
FH and SH agree (SH pays its extra exchange only in rounds with a mismatch), auto picks FH
behind a slow handshake, malformed hidden states are refused while the session and the
others go on, and sessions that did not ask for it stay exact."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgespec.core.types import SamplingParams
from edgespec.policies.history_snapshot import HistorySnapshot
from edgespec.policies.semantic.head import DecisionHead
from edgespec.policies.window import StaticWindow
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.edge.drafter import DraftOptions, GenerationResult, generate
from edgespec.runtime.edge.semantic import SemanticRequest, UploadMode
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import (
    DRAFT_HIDDEN,
    FusedCall,
    FusedRound,
    SemanticSpec,
    SessionSpec,
    VerifyCall,
    VerifyReply,
)
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.round_log import RoundLog, read_round_log
from edgespec.runtime.server.semantic import semantic_rules
from edgespec.runtime.wire.emulated_link import EmulatedLinkVerifier, LinkEmulation
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.grpc_server import ServerThread
from edgespec.runtime.wire.inprocess import LocalVerifier, target_greedy_decode
from tests.runtime.conftest import start_server
from tests.runtime.semantic_helpers import (
    HIDDEN,
    accept_all_reference,
    constant_head,
    draft_coordinate_head,
    next_token,
    rows,
)

PROMPT = (3, 1, 4, 1, 5)
MAX_NEW = 24
GAMMA = 4


class Counting:
    """A verifier that counts its verify calls."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls = 0

    def open(self, spec: SessionSpec) -> None:
        self.inner.open(spec)

    def verify(self, call: VerifyCall) -> VerifyReply:
        self.calls += 1
        reply: VerifyReply = self.inner.verify(call)
        return reply

    def close(self, session_id: str) -> None:
        self.inner.close(session_id)


@pytest.fixture
def serve(target: TransformersTarget) -> Iterator[Any]:
    started: list[ServerThread] = []

    def make(head: Any, **kw: Any) -> ServerThread:
        server = start_server(target, rules=semantic_rules(head), **kw)
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop(grace_s=0)


def _run(
    verifier: Any,
    draft_model: Any,
    threshold: int | None,
    upload: UploadMode = "auto",
    sid: str = "s",
    max_new: int = MAX_NEW,
) -> GenerationResult:
    semantic = None if threshold is None else SemanticRequest(threshold, 20e6, upload=upload)
    return generate(
        verifier,
        TransformersDraft(draft_model),
        PROMPT,
        SamplingParams(max_new_tokens=max_new),
        DraftOptions(sid),
        StaticWindow(GAMMA),
        semantic=semantic,
    )


def _remote(server: ServerThread) -> RemoteVerifier:
    return RemoteVerifier(f"127.0.0.1:{server.port}")


@pytest.mark.parametrize("upload", ["fh", "sh"])
def test_threshold_0_is_greedy_speculative_decoding(
    serve: Any, target: TransformersTarget, draft_model: Any, upload: UploadMode
) -> None:
    """A head that would accept every mismatch, at threshold 0: token-identical to the
    target alone, and SH never needs a follow-up."""
    server = serve(constant_head(-20.0))
    counting = Counting(_remote(server))
    result = _run(counting, draft_model, 0, upload)
    assert result.output_token_ids == target_greedy_decode(target, PROMPT, MAX_NEW)
    assert result.semantic is not None and result.semantic.upload == upload
    assert counting.calls == len(result.rounds)
    assert sum(result.semantic.accepted_mismatches) == 0


@pytest.mark.parametrize("upload", ["fh", "sh"])
def test_a_head_that_never_rejects_takes_the_drafts_own_tokens(
    serve: Any, target_model: Any, draft_model: Any, upload: UploadMode
) -> None:
    server = serve(constant_head(-20.0))
    result = _run(_remote(server), draft_model, 12, upload)
    expected = accept_all_reference(target_model, draft_model, PROMPT, GAMMA, MAX_NEW)
    assert result.output_token_ids == expected
    assert all(r.num_accepted == r.num_drafted for r in result.rounds)
    assert result.semantic is not None and sum(result.semantic.accepted_mismatches) > 0
    # AAL as WISV counts it: γ drafts plus the bonus, every round
    assert [r.num_committed for r in result.rounds] == [GAMMA + 1] * (MAX_NEW // (GAMMA + 1)) + [
        MAX_NEW % (GAMMA + 1)
    ]


def test_fh_and_sh_agree_and_sh_pays_one_exchange_per_round_with_a_mismatch(
    serve: Any, target: TransformersTarget, draft_model: Any
) -> None:
    """A head reading the draft's real hidden states (some mismatches accepted, some
    rejected): FH and SH commit the same tokens round for round; SH takes a second
    exchange exactly in the rounds that had a mismatch."""
    server = serve(draft_coordinate_head())
    fh_verifier, sh_verifier = Counting(_remote(server)), Counting(_remote(server))
    fh = _run(fh_verifier, draft_model, 12, "fh", "fh", 40)
    sh = _run(sh_verifier, draft_model, 12, "sh", "sh", 40)
    assert fh.output_token_ids == sh.output_token_ids
    assert fh.semantic is not None and sh.semantic is not None
    assert fh.semantic.accepted_mismatches == sh.semantic.accepted_mismatches
    assert [r.num_accepted for r in fh.rounds] == [r.num_accepted for r in sh.rounds]
    had_mismatch = [
        m > 0 or r.num_accepted < r.num_drafted
        for r, m in zip(fh.rounds, fh.semantic.accepted_mismatches, strict=True)
    ]
    assert any(had_mismatch) and not all(had_mismatch)  # both kinds of round occur
    assert fh.semantic.exchanges == (1,) * len(fh.rounds) and fh_verifier.calls == len(fh.rounds)
    assert sh.semantic.exchanges == tuple(2 if m else 1 for m in had_mismatch)
    assert sh_verifier.calls == len(sh.rounds) + sum(had_mismatch)
    # lossy for real: the output is not the target's own
    assert sum(fh.semantic.accepted_mismatches) > 0
    assert fh.output_token_ids != target_greedy_decode(target, PROMPT, 40)


@pytest.mark.parametrize(("rtt_ms", "upload"), [(0.0, "sh"), (24.0, "fh")])
def test_auto_picks_fh_when_the_handshake_rtt_is_above_10_ms(
    target: TransformersTarget, draft_model: Any, rtt_ms: float, upload: str
) -> None:
    engine = VerificationEngine(target, rules=semantic_rules(draft_coordinate_head()))
    verifier: Any = LocalVerifier(engine)
    if rtt_ms:
        verifier = EmulatedLinkVerifier(verifier, LinkEmulation(rtt_ms), np.random.default_rng(0))
    result = _run(verifier, draft_model, 12, "auto", max_new=6)
    assert result.semantic is not None and result.semantic.upload == upload
    assert (result.semantic.handshake_rtt_s > 0.010) == (upload == "fh")
    if rtt_ms:  # FH: one uplink per round, each carrying the hidden states
        sent = [t for t in verifier.transfers if t.method == "verify"]
        assert len(sent) == len(result.rounds)


def _error(verifier: RemoteVerifier, call: VerifyCall) -> tuple[ErrorCode, str]:
    with pytest.raises(RequestError) as info:
        verifier.verify(call)
    return info.value.code, info.value.message


def test_malformed_hidden_states_are_refused_and_every_session_goes_on(
    serve: Any, target: TransformersTarget, target_model: Any, draft_model: Any
) -> None:
    server = serve(draft_coordinate_head())
    verifier = _remote(server)
    spec = SemanticSpec(12, 20e6)
    verifier.open(
        SessionSpec(
            "a",
            "c",
            PROMPT,
            SamplingParams(max_new_tokens=8),
            verification_rule="semantic",
            semantic=spec,
        )
    )
    other = _remote(server)  # an exact session, mid-generation
    other.open(SessionSpec("b", "c", PROMPT, SamplingParams(max_new_tokens=8)))
    first = other.verify(VerifyCall("b", len(PROMPT), ()))
    best = next_token(target_model, PROMPT)
    block = ((best + 1) % 64, 7, 9)  # a mismatch first
    n = len(PROMPT)
    bad = [
        (
            VerifyCall("a", n, block, payloads={DRAFT_HIDDEN: np.zeros((3, 16), np.float32)}),
            "draft_hidden has shape [3, 16]; the server's decision head "
            "takes draft hidden states of width 32 (rows x 32)",
        ),
        (
            VerifyCall("a", n, block, payloads={DRAFT_HIDDEN: rows(1, 1)}),
            "draft_hidden has 2 rows for 3 draft tokens: an FH call "
            "sends one row per draft token, an SH call none (the server asks for the rows "
            "it needs)",
        ),
        (
            VerifyCall("a", n, block, payloads={DRAFT_HIDDEN: rows(1, np.nan, 1)}),
            "draft_hidden row 1 (draft position 1) has a non-finite value",
        ),
    ]
    for call, message in bad:
        assert _error(verifier, call) == (ErrorCode.INVALID_ARGUMENT, message)
    asked = verifier.verify(VerifyCall("a", n, block))  # SH: the server asks
    positions = asked.outcome.hidden_request
    assert positions is not None and positions[0] == 0 and asked.outcome.committed_token_ids == ()
    code, message = _error(verifier, VerifyCall("a", n, block))
    assert code is ErrorCode.INVALID_ARGUMENT
    assert message.startswith(
        f"session 'a' awaits the draft hidden states of positions "
        f"{list(positions)}: the follow-up call must carry payload"
    )
    code, message = _error(
        verifier, VerifyCall("a", n, block[:1], payloads={DRAFT_HIDDEN: rows(1)})
    )
    assert code is ErrorCode.INVALID_ARGUMENT and "resend that block" in message
    code, message = _error(
        verifier,
        VerifyCall("a", n, block, payloads={DRAFT_HIDDEN: rows(*[1] * (len(positions) + 1))}),
    )
    assert code is ErrorCode.INVALID_ARGUMENT
    assert "the server asked for the hidden states of positions" in message
    # the exact session went on meanwhile, and finishes as the target alone would
    context = (*PROMPT, *first.outcome.committed_token_ids)
    rest = generate(
        other,
        TransformersDraft(draft_model),
        context,
        SamplingParams(max_new_tokens=7),
        DraftOptions("b2"),
    )
    reference = target_greedy_decode(target, PROMPT, 8)
    assert (*first.outcome.committed_token_ids, *rest.output_token_ids) == reference
    # and so does the semantic one: its follow-up is decided (+1: the head rejects)
    done = verifier.verify(
        VerifyCall("a", n, block, payloads={DRAFT_HIDDEN: rows(*[1] * len(positions))})
    )
    assert done.outcome.committed_token_ids == (best,)
    assert server.service is not None and server.service.stats().num_rejected == 6


def test_sessions_that_do_not_ask_stay_exact_and_lossy_ones_are_labelled(
    target: TransformersTarget, draft_model: Any, tmp_path: Path
) -> None:
    """On a server with a head: an exact session's output is the target's own and its
    round-log rows carry no labels; a semantic session's rows say lossy, and the server's
    log line for it says so when it opens."""
    lines: list[str] = []
    log = RoundLog(tmp_path / "rounds.jsonl")
    server = start_server(
        target, rules=semantic_rules(constant_head(-20.0)), log=lines.append, round_log=log
    )
    try:
        exact = _run(_remote(server), draft_model, None, sid="exact", max_new=10)
        lossy = _run(_remote(server), draft_model, 12, "fh", sid="lossy", max_new=10)
    finally:
        server.stop(grace_s=0)
        log.close()
    assert exact.output_token_ids == target_greedy_decode(target, PROMPT, 10)
    assert exact.semantic is None
    assert lossy.output_token_ids != exact.output_token_ids
    assert lines == [
        "session 'lossy' (client 'edge-0') opened: LOSSY semantic verification (threshold "
        "12/16: a mismatch is rejected when p >= 0.75; channel uplink 20 Mbit/s, PER 0, RTT "
        "0 ms)"
    ]
    rows_ = [json.loads(line) for line in (tmp_path / "rounds.jsonl").read_text().splitlines()]
    by_session = {r["request_id"]: r for r in rows_}
    assert "lossy" not in by_session["exact"] and "verification" not in by_session["exact"]
    assert {k: by_session["lossy"][k] for k in ("verification", "lossy", "threshold")} == {
        "verification": "semantic",
        "lossy": True,
        "threshold": 12,
    }
    assert len(list(read_round_log(tmp_path / "rounds.jsonl"))) == len(rows_)


def _fused_round(server: ServerThread, sid: str, threshold: int, gamma: int) -> FusedRound:
    """One fused round of a fresh semantic session (no server window: one round a run)."""
    verifier = _remote(server)
    spec = SessionSpec(
        sid, "c", PROMPT, SamplingParams(max_new_tokens=MAX_NEW),
        verification_rule="semantic", semantic=SemanticSpec(threshold, 20e6),
    )  # fmt: skip
    verifier.open(spec)
    (played,) = list(verifier.run_fused(FusedCall(sid, len(PROMPT), gamma, HistorySnapshot())))
    return played


def test_fused_rounds_of_a_semantic_session_verify_semantically(
    target: TransformersTarget, target_model: Any, draft_model: Any
) -> None:
    """AWC may move a semantic session to fused rounds: the server's co-located draft hands
    its own hidden states to the session's rule (no upload), so a head that never rejects
    commits the draft's γ tokens and the bonus, and threshold 0 stays greedy."""
    server = start_server(
        target, lambda: TransformersDraft(draft_model), rules=semantic_rules(constant_head(-20.0))
    )
    try:
        lossy = _fused_round(server, "lossy", 12, GAMMA)
        exact = _fused_round(server, "greedy", 0, GAMMA)
    finally:
        server.stop(grace_s=0)
    expected = accept_all_reference(target_model, draft_model, PROMPT, GAMMA, MAX_NEW)
    assert lossy.reply.outcome.committed_token_ids == expected[: GAMMA + 1]
    greedy = target_greedy_decode(target, PROMPT, MAX_NEW)
    committed = exact.reply.outcome.committed_token_ids
    assert committed == greedy[: len(committed)]


def test_fused_rounds_need_a_draft_of_the_heads_width(
    target: TransformersTarget, draft_model: Any
) -> None:
    narrow = DecisionHead(
        16, HIDDEN, np.zeros(16 + HIDDEN + 4), np.ones(16 + HIDDEN + 4),
        np.zeros((16 + HIDDEN + 4, 1)), np.zeros(1), np.zeros((1, 1)), np.zeros(1),
    )  # fmt: skip
    server = start_server(
        target, lambda: TransformersDraft(draft_model), rules=semantic_rules(narrow)
    )
    try:
        with pytest.raises(RequestError) as info:
            _fused_round(server, "f", 12, 3)
    finally:
        server.stop(grace_s=0)
    assert (info.value.code, info.value.message) == (
        ErrorCode.FAILED_PRECONDITION,
        "fused rounds of semantic session 'f': the server's draft has hidden size 32, the "
        "decision head takes draft hidden states of width 16",
    )
