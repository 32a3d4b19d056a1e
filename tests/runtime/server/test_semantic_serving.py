"""Semantic (lossy, WISV) verification end to end over loopback gRPC with the tiny models:
threshold 0 is exact greedy SD, a head that never rejects takes the draft's own tokens,
FH and SH agree (SH pays its extra exchange only in rounds with a mismatch), auto picks FH
behind a slow handshake, and sessions that did not ask for it stay exact. Malformed hidden
states: test_semantic_refusals.py; fused rounds: test_semantic_fused_serving.py."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgespec.core.types import SamplingParams
from edgespec.policies.window import StaticWindow
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.edge.drafter import DraftOptions, GenerationResult, generate
from edgespec.runtime.edge.semantic import SemanticRequest, UploadMode
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyReply
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.round_log import RoundLog, read_round_log
from edgespec.runtime.server.semantic import semantic_rules
from edgespec.runtime.wire.emulated_link import EmulatedLinkVerifier, LinkEmulation
from edgespec.runtime.wire.inprocess import LocalVerifier, target_greedy_decode
from tests.runtime.conftest import start_server
from tests.runtime.semantic_helpers import (
    accept_all_reference,
    constant_head,
    draft_coordinate_head,
)
from tests.runtime.server.semantic_engine import PROMPT
from tests.runtime.server.semantic_remote import GAMMA, MAX_NEW
from tests.runtime.server.semantic_remote import remote as _remote


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


def _run(
    verifier: Any,
    draft_model: Any,
    threshold: int | None,
    upload: UploadMode = "auto",
    sid: str = "s",
    max_new: int = MAX_NEW,
    clock: Callable[[], float] = time.perf_counter,
) -> GenerationResult:
    semantic = None if threshold is None else SemanticRequest(threshold, 20e6, upload=upload)
    return generate(
        verifier,
        TransformersDraft(draft_model),
        PROMPT,
        SamplingParams(max_new_tokens=max_new),
        DraftOptions(sid),
        StaticWindow(GAMMA),
        clock=clock,
        semantic=semantic,
    )


def test_a_draft_of_another_width_than_the_heads_is_refused_when_its_session_opens(
    serve: Any,
) -> None:
    """The drafter says its draft's hidden size when it opens the session: a head trained
    for another draft was served the session and refused each call at its first mismatch,
    after the output so far had streamed."""
    from edgespec.runtime.errors import ErrorCode, RequestError
    from edgespec.runtime.testing import tiny_llama

    server = serve(constant_head(-20.0))
    with pytest.raises(RequestError) as error:
        _run(_remote(server), tiny_llama(seed=3, hidden_size=48), 12, "sh")
    assert error.value.code == ErrorCode.INVALID_ARGUMENT
    assert error.value.message == (
        "session 's''s draft has hidden size 48; the server's decision head takes draft hidden "
        "states of width 32 (a head trained for another draft)"
    )


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


def test_threshold_16_accepts_every_mismatch_without_asking_sh_for_hidden_states(
    serve: Any, target_model: Any, draft_model: Any
) -> None:
    """p >= 16/16 rejects nothing (a head whose p rounds to exactly 1.0 included), so the
    verdict needs no hidden states: SH took a second exchange in every round with a
    mismatch (the simulator already took none)."""
    server = serve(constant_head(40.0))  # p = 1.0 exactly: rejected at any T below 16
    counting = Counting(_remote(server))
    result = _run(counting, draft_model, 16, "sh")
    expected = accept_all_reference(target_model, draft_model, PROMPT, GAMMA, MAX_NEW)
    assert result.output_token_ids == expected
    assert result.semantic is not None and sum(result.semantic.accepted_mismatches) > 0
    assert result.semantic.exchanges == (1,) * len(result.rounds)
    assert counting.calls == len(result.rounds)


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
    clock: Callable[[], float] = time.perf_counter  # 24 ms of link: on a loaded machine more
    if rtt_ms:
        verifier = EmulatedLinkVerifier(verifier, LinkEmulation(rtt_ms), np.random.default_rng(0))
    else:  # in process, 1 ms a reading: an open on a loaded machine took 13 ms (CI-like run)
        clock = itertools.count(0.0, 1e-3).__next__
    result = _run(verifier, draft_model, 12, "auto", max_new=6, clock=clock)
    assert result.semantic is not None and result.semantic.upload == upload
    assert (result.semantic.handshake_rtt_s > 0.010) == (upload == "fh")
    if rtt_ms:  # FH: one uplink per round, each carrying the hidden states
        sent = [t for t in verifier.transfers if t.method == "verify"]
        assert len(sent) == len(result.rounds)


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
