"""A semantic session on a llama.cpp target asks llama.cpp for the K + 1 logit rows (and
their hidden states) its rule reads, on a cold start and a re-prefill alike: llama.cpp gives
hidden states only of tokens with logits, and the engine used to ask for every forwarded
token's, a V-wide logit row per prompt token (a 1,000-token cold start with Gemma 3's
262k vocabulary: +2,968 MiB peak). The rows kept are the ones every token's pass gives,
and the verdicts the same."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.runtime.backends.llamacpp_fixtures import SKIP_REASON, count_output_rows, tiny_gguf

pytest.importorskip("llama_cpp", reason=SKIP_REASON)
pytest.importorskip("gguf", reason="the tiny test model is written with the gguf package")

from edgespec.core.types import SamplingParams
from edgespec.policies.semantic.csi import CSI_FEATURE_NAMES, ChannelState, csi_features
from edgespec.policies.semantic.head import DecisionHead
from edgespec.runtime.backends.base import ForwardItem
from edgespec.runtime.backends.llamacpp_backend import LlamaCppTarget
from edgespec.runtime.backends.llamacpp_context import LlamaContext, LlamaCppSettings
from edgespec.runtime.messages import (
    DRAFT_HIDDEN,
    SemanticSpec,
    SessionSpec,
    VerifyCall,
    VerifyOutcome,
)
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.semantic import semantic_rules

TARGET_HIDDEN = 64  # the tiny GGUF's n_embd
DRAFT_HIDDEN_SIZE = 4
PROMPT = tuple(int(t) for t in np.random.default_rng(0).integers(3, 64, 200))
SPEC = SemanticSpec(threshold=8, uplink_bps=20e6)


@pytest.fixture(scope="module")
def target() -> LlamaCppTarget:
    return LlamaCppTarget(LlamaCppSettings(tiny_gguf(0), 4, 512, threads=1))


@pytest.fixture
def output_rows(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The output rows (a V-wide logit row each) each ``llama_decode`` batch makes llama.cpp
    compute: its tokens with a logits flag, or with embeddings on (``hidden``) every token
    (:func:`test_with_embeddings_on_llamacpp_outputs_every_token`)."""
    return count_output_rows(monkeypatch)


def test_with_embeddings_on_llamacpp_outputs_every_token() -> None:
    """Why hidden states get a batch of their own: with embeddings on, llama.cpp computes an
    output row for every token of the batch, logits flag or not; off, only flagged ones."""
    ctx = LlamaContext(LlamaCppSettings(tiny_gguf(0), 2, 64, threads=1))
    try:
        lib, handle = ctx._lib, ctx._ctx  # llama.cpp's own accessor of a row
        for hidden, seq in ((False, 0), (True, 1)):
            logits, _ = ctx.decode(
                [(5, 0, seq, False), (7, 1, seq, False), (9, 2, seq, True)], hidden
            )
            assert logits.shape[0] == 1
            assert bool(lib.llama_get_logits_ith(handle, 0)) is hidden  # an unflagged token
    finally:
        ctx.close()


def target_coordinate_head() -> DecisionHead:
    """p = σ(1000·ReLU(h_t[0]) − 5): rejects a mismatch whose target hidden state has
    coordinate 0 above ~0.005, accepts it otherwise."""
    d_in = DRAFT_HIDDEN_SIZE + TARGET_HIDDEN + len(CSI_FEATURE_NAMES)
    w1 = np.zeros((d_in, 1))
    w1[DRAFT_HIDDEN_SIZE, 0] = 1.0
    return DecisionHead(DRAFT_HIDDEN_SIZE, TARGET_HIDDEN, np.zeros(d_in), np.ones(d_in), w1,
                        np.zeros(1), np.array([[1000.0]]), np.array([-5.0]))  # fmt: skip


def test_a_cold_start_asks_for_the_logit_rows_only(
    target: LlamaCppTarget, output_rows: list[int]
) -> None:
    every = target.forward([ForwardItem(None, 0, PROMPT, 4, want_hidden=True)])[0]
    assert output_rows == [64, 64, 64, 8]  # return_hidden: every token's row, in chunks
    item = ForwardItem(None, 0, PROMPT, 4, want_hidden=True, hidden_of_logits_only=True)
    kept = target.forward([item])[0]
    assert output_rows == [64, 64, 64, 8, 0, 4]  # the prompt without rows, then the 4
    assert every.hidden is not None and kept.hidden is not None
    assert kept.hidden.shape == (4, TARGET_HIDDEN)
    assert np.array_equal(kept.hidden, every.hidden[-4:])
    assert np.array_equal(kept.logits, every.logits)


def _expected(target: LlamaCppTarget, context: tuple[int, ...], block: tuple[int, ...]) -> Any:
    """What the rule commits for ``block`` after ``context``, from a pass that returns every
    token's hidden state (the rows the engine read before)."""
    k = len(block)
    ref = target.forward([ForwardItem(None, 0, (*context, *block), k + 1, want_hidden=True)])[0]
    assert ref.hidden is not None
    argmax = [int(a) for a in ref.logits.argmax(axis=1)]
    mismatches = [j for j in range(k) if block[j] != argmax[j]]
    head = target_coordinate_head()
    x = head.inputs(np.zeros((len(mismatches), DRAFT_HIDDEN_SIZE)),
                    ref.hidden[-(k + 1) :][mismatches].astype(np.float64),
                    csi_features(ChannelState(SPEC.uplink_bps, SPEC.per, SPEC.rtt_s)))  # fmt: skip
    rejected = head.rejects(x, SPEC.threshold)
    stop = next((j for j, r in zip(mismatches, rejected, strict=True) if r), k)
    return (*block[:stop], argmax[stop]), sum(1 for j in mismatches if j < stop)


@pytest.mark.parametrize("prefix_cache", [True, False])
def test_semantic_rounds_ask_for_k_plus_1_rows_with_the_same_verdicts(
    target: LlamaCppTarget, output_rows: list[int], prefix_cache: bool
) -> None:
    """Two rounds of a 3-token block: the cold start of 200 prompt tokens and (without a
    prefix cache) a pass over the whole context again each ask for 4 output rows."""
    rules = semantic_rules(target_coordinate_head(), target_hidden_size=TARGET_HIDDEN)
    engine = VerificationEngine(target, rules=rules, prefix_cache=prefix_cache)
    sampling = SamplingParams(max_new_tokens=64)
    engine.open_session(SessionSpec("s", "c", PROMPT, sampling, verification_rule="semantic",
                                    semantic=SPEC))  # fmt: skip
    context, found, expected = PROMPT, [], []
    for block in ((5, 9, 11), (7, 7, 13)):
        expected.append(_expected(target, context, block))
        output_rows.clear()
        hidden = np.zeros((3, DRAFT_HIDDEN_SIZE), np.float32)
        call = VerifyCall("s", len(context), block, payloads={DRAFT_HIDDEN: hidden})
        engine.validate(call, 16)
        (out,) = engine.verify_batch([call])
        assert isinstance(out, VerifyOutcome)
        assert sum(output_rows) == 4  # K + 1, not the forwarded tokens (200 + 3 cold)
        found.append((out.committed_token_ids, out.accepted_mismatches))
        context = (*context, *out.committed_token_ids)
    assert found == expected
    assert any(m for _, m in found) and any(len(c) <= 3 for c, _ in found)
