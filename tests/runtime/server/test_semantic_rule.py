"""The semantic (lossy, WISV) rule in the engine, in-process: which mismatches end a round,
FH and SH (the kept pass and its follow-up), threshold 0, and that exact sessions beside it
keep the exact path. What a semantic session and call may carry: test_semantic_checks.py."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from edgespec.runtime.backends.base import ForwardItem, ForwardOutput
from edgespec.runtime.backends.logit_rows import ArgmaxRows, HostRows
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import (
    DRAFT_HIDDEN,
    SemanticSpec,
    SessionSpec,
    VerifyCall,
    VerifyOutcome,
)
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.hidden_followup import (
    PendingHidden,
    decide_followup,
    judge_pass,
    logit_hidden_rows,
    waiting_outcome,
)
from edgespec.runtime.server.semantic import SemanticVerification, semantic_rules
from edgespec.runtime.server.verification import Verdict, rule_labels
from tests.runtime.semantic_helpers import (
    constant_head,
    draft_coordinate_head,
    next_token,
    per_head,
    rows,
)
from tests.runtime.server.semantic_engine import GOOD, GREEDY, PROMPT
from tests.runtime.server.semantic_engine import open_semantic as _open
from tests.runtime.server.semantic_engine import semantic_engine as _engine


def _verify(engine: VerificationEngine, call: VerifyCall) -> VerifyOutcome:
    engine.validate(call, 16)
    (out,) = engine.verify_batch([call])
    assert isinstance(out, VerifyOutcome), out
    return out


def _block(target_model: Any) -> tuple[tuple[int, ...], list[int]]:
    """A 5-token block after PROMPT: mismatch, match, mismatch, mismatch, mismatch (each
    judged after the block's earlier tokens), and the target's argmax at each position."""
    seq, block, argmax = list(PROMPT), [], []
    for j in range(5):
        best = next_token(target_model, seq)
        token = best if j == 1 else (best + 1) % 64
        argmax.append(best)
        block.append(token)
        seq.append(token)
    return tuple(block), argmax


def test_the_earliest_rejected_mismatch_ends_the_round(
    target: TransformersTarget, target_model: Any
) -> None:
    """Mismatches 0 and 2 accepted, the match at 1 whatever its row says, mismatch 3
    rejected: commit draft 0..2 and the target's argmax at 3; mismatch 4 is never judged."""
    block, argmax = _block(target_model)
    engine = _engine(target)
    _open(engine, "fh")
    hidden = rows(-1, +1, -1, +1, -1)  # +1: the head rejects (only at a mismatch)
    out = _verify(engine, VerifyCall("fh", len(PROMPT), block, payloads={DRAFT_HIDDEN: hidden}))
    assert out.committed_token_ids == (*block[:3], argmax[3])
    result = out.result
    assert (result.num_accepted, result.first_rejection, out.accepted_mismatches) == (3, 3, 2)
    # the session goes on from the committed tokens (its KV cropped from the kept pass)
    seq = [*PROMPT, *out.committed_token_ids]
    follow: list[int] = []
    for _ in range(3):
        follow.append(next_token(target_model, [*seq, *follow]))
    nxt = _verify(
        engine, VerifyCall("fh", len(seq), tuple(follow), payloads={DRAFT_HIDDEN: rows(+1, +1, +1)})
    )
    assert nxt.committed_token_ids == (*follow, next_token(target_model, [*seq, *follow]))


def test_sh_asks_for_the_mismatches_then_decides_from_the_kept_pass(
    target: TransformersTarget, target_model: Any
) -> None:
    block, argmax = _block(target_model)
    engine = _engine(target)
    _open(engine, "sh")
    passes = engine.counters().num_forward_passes
    first = _verify(engine, VerifyCall("sh", len(PROMPT), block))
    assert first.hidden_request == (0, 2, 3, 4) and first.committed_token_ids == ()
    assert engine.session_tokens("sh") == PROMPT  # nothing committed yet
    assert engine.pending_sizes("sh", 5)[0] == 0  # the follow-up forwards nothing
    wanted = rows(-1, +1, -1, +1, -1)[[0, 2, 3, 4]]
    out = _verify(engine, VerifyCall("sh", len(PROMPT), block, payloads={DRAFT_HIDDEN: wanted}))
    assert engine.counters().num_forward_passes == passes + 1  # one pass for both calls
    assert out.committed_token_ids == (*block[:3], argmax[3]) and out.accepted_mismatches == 2
    assert out.hidden_request is None


def test_threshold_0_rejects_the_first_mismatch_without_hidden_states(
    target: TransformersTarget, target_model: Any
) -> None:
    block, argmax = _block(target_model)
    engine = _engine(target, constant_head(-20.0))  # a head that would accept everything
    _open(engine, "t0", SemanticSpec(0, 20e6))
    out = _verify(engine, VerifyCall("t0", len(PROMPT), block))  # SH, yet no follow-up
    assert out.hidden_request is None
    assert out.committed_token_ids == (argmax[0],) and out.accepted_mismatches == 0


def test_a_head_that_never_rejects_commits_the_block_and_a_bonus(
    target: TransformersTarget, target_model: Any
) -> None:
    block, _ = _block(target_model)
    engine = _engine(target, constant_head(-20.0))
    _open(engine, "all")
    out = _verify(
        engine, VerifyCall("all", len(PROMPT), block, payloads={DRAFT_HIDDEN: rows(0, 0, 0, 0, 0)})
    )
    assert out.committed_token_ids == (*block, next_token(target_model, [*PROMPT, *block]))
    assert out.result.first_rejection is None and out.accepted_mismatches == 4


def test_the_channel_reaches_the_head(target: TransformersTarget, target_model: Any) -> None:
    """The same block on a clean link (all accepted) and a lossy one (first mismatch
    rejected): the head here reads only the session's PER."""
    block, argmax = _block(target_model)
    engine = _engine(target, per_head())
    _open(engine, "clean", SemanticSpec(12, 20e6, per=0.0))
    _open(engine, "lossy", SemanticSpec(12, 20e6, per=0.3))
    hidden = {DRAFT_HIDDEN: rows(0, 0, 0, 0, 0)}
    clean = _verify(engine, VerifyCall("clean", len(PROMPT), block, payloads=hidden))
    lossy = _verify(engine, VerifyCall("lossy", len(PROMPT), block, payloads=hidden))
    assert clean.result.num_accepted == 5
    assert lossy.committed_token_ids == (argmax[0],)


def test_follow_up_errors_name_what_the_server_waits_for(
    target: TransformersTarget, target_model: Any
) -> None:
    block, _ = _block(target_model)
    engine = _engine(target)
    _open(engine, "sh")
    assert _verify(engine, VerifyCall("sh", len(PROMPT), block)).hidden_request == (0, 2, 3, 4)
    cases = [
        (
            VerifyCall("sh", len(PROMPT), block),
            "session 'sh' awaits the draft hidden states of positions [0, 2, 3, 4]: the "
            "follow-up call must carry payload 'draft_hidden' with those 4 rows",
        ),
        (
            VerifyCall("sh", len(PROMPT), block[:2], payloads={DRAFT_HIDDEN: rows(1, 1)}),
            "session 'sh' awaits the draft hidden states of positions [0, 2, 3, 4] for its "
            "block of 5 tokens at prefix_len 5: resend that block with payload 'draft_hidden' "
            "holding those 4 rows",
        ),
        (
            VerifyCall("sh", len(PROMPT), block, payloads={DRAFT_HIDDEN: rows(1)}),
            "draft_hidden has 1 rows; the server asked for the hidden states of positions "
            "[0, 2, 3, 4] (4 rows)",
        ),
        (
            VerifyCall("sh", len(PROMPT), block, payloads={DRAFT_HIDDEN: rows(1, 1, np.nan, 1)}),
            "draft_hidden row 2 (draft position 3) has a non-finite value",
        ),
    ]
    for call, message in cases:
        with pytest.raises(RequestError) as info:
            engine.validate(call, 16)
        assert (info.value.code, info.value.message) == (ErrorCode.INVALID_ARGUMENT, message)
    out = _verify(
        engine, VerifyCall("sh", len(PROMPT), block, payloads={DRAFT_HIDDEN: rows(-1, -1, -1, -1)})
    )
    assert out.result.num_accepted == 5  # the session was kept waiting, then decided


def test_exact_sessions_beside_semantic_ones_keep_the_exact_path(
    target: TransformersTarget, target_model: Any
) -> None:
    """No hidden states are asked of the backend for an exact session, and a hidden-state
    payload is refused, on a server that serves semantic too."""
    block, argmax = _block(target_model)
    seen: list[ForwardItem] = []

    class Spy:
        def __getattr__(self, name: str) -> Any:
            return getattr(target, name)

        def forward(self, items: list[ForwardItem]) -> list[ForwardOutput]:
            seen.extend(items)
            return target.forward(items)

    engine = VerificationEngine(Spy(), rules=semantic_rules(constant_head(-20.0)))  # type: ignore[arg-type]
    _open(engine, "exact", None)
    _open(engine, "wisv")
    exact = VerifyCall("exact", len(PROMPT), block)
    wisv = VerifyCall("wisv", len(PROMPT), block, payloads={DRAFT_HIDDEN: rows(0, 0, 0, 0, 0)})
    for call in (exact, wisv):
        engine.validate(call, 16)
    out_exact, out_wisv = engine.verify_batch([exact, wisv])
    assert [item.want_hidden for item in seen] == [False, True]
    assert isinstance(out_exact, VerifyOutcome) and isinstance(out_wisv, VerifyOutcome)
    assert out_exact.committed_token_ids == (argmax[0],)  # lossless: the target's token
    assert out_wisv.result.num_accepted == 5 and out_exact.target_hidden is None
    assert out_wisv.target_hidden is None  # the rule's hidden rows are not sent back
    bad = VerifyCall("exact", len(PROMPT) + 1, (1,), payloads={DRAFT_HIDDEN: rows(0)})
    with pytest.raises(
        RequestError, match=r"rule 'exact' takes no payload\(s\) \['draft_hidden'\]"
    ):
        engine.validate(bad, 16)
    assert rule_labels("exact", engine.session_rule("exact")) == {}


def test_a_kept_pass_holds_its_rows_argmax_not_the_rows_at_a_262k_vocabulary() -> None:
    """What an SH session's kept pass holds across calls is read at the follow-up: at
    Gemma 3's vocabulary six float32 rows are 6 MB, their argmax six integers; the waiting
    outcome and the decided verdict are those of the full rows."""
    vocab, block = 262_144, (10, 20, 30, 40, 50)
    argmax = (11, 20, 31, 41, 51, 60)  # mismatches at draft positions 0, 2, 3, 4
    logits = np.zeros((len(argmax), vocab), np.float32)
    logits[np.arange(len(argmax)), argmax] = 1.0
    spec = SessionSpec("s", "c", PROMPT, GREEDY, verification_rule="semantic", semantic=GOOD)
    rule = SemanticVerification(draft_coordinate_head()).bind(spec)
    call = VerifyCall("s", len(PROMPT), block)
    item = ForwardItem(None, 0, (*PROMPT, *block), len(argmax), want_hidden=True)
    out = ForwardOutput(HostRows(logits), "kv", np.zeros((len(item.new_token_ids), 32), np.float32))
    target_hidden = logit_hidden_rows(item, out)
    pending = judge_pass(rule, call, GREEDY, item, out, target_hidden, False)
    assert isinstance(pending, PendingHidden) and pending.positions == (0, 2, 3, 4)
    assert isinstance(pending.out.rows, ArgmaxRows) and pending.out.rows.argmax() == argmax
    assert waiting_outcome(pending).result.extra_token == argmax[0]
    followup = VerifyCall("s", len(PROMPT), block, payloads={DRAFT_HIDDEN: rows(-1, +1, -1, +1)})
    decided = decide_followup(rule, "semantic", pending, GREEDY, followup)
    full = rule.verdict_hidden(call, GREEDY, HostRows(logits), target_hidden, followup)
    assert isinstance(decided, Verdict) and isinstance(full, Verdict)
    assert decided.result == full.result and decided.result.num_accepted == 2
    with pytest.raises(TypeError, match="only the rows' argmax was kept"):
        pending.out.rows.host()
