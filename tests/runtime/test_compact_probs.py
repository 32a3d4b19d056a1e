"""A draft distribution held as each row's nonzero entries (runtime/compact_probs.py, what
the server decodes from the wire) is checked and verified exactly as its dense K x V rows:
the same verdict, token for token, from the same random stream (so sampled verification
stays identically distributed), and the same refusal, message for message."""

from __future__ import annotations

import numpy as np
import pytest

from edgespec.core.speculative import as_drawn
from edgespec.core.types import SamplingParams
from edgespec.runtime.backends.logit_rows import HostRows
from edgespec.runtime.compact_probs import CompactProbs
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import VerifyCall
from edgespec.runtime.sampling import draft_sample
from edgespec.runtime.server.verification import ExactRule, Verdict
from edgespec.runtime.validation import check_draft_probs
from edgespec.runtime.wire.codec import call_from_proto, call_to_proto

SAMPLED = SamplingParams(temperature=0.9, top_p=0.95, max_new_tokens=64)


def _as_received(call: VerifyCall, vocab: int) -> VerifyCall:
    """``call`` as the server reads it off the wire: its q a :class:`CompactProbs`."""
    back = call_from_proto(call_to_proto(call), vocab, 64)
    assert isinstance(back.draft_probs, CompactProbs)
    return back


def _block(rng: np.random.Generator, k: int, vocab: int) -> tuple[tuple[int, ...], np.ndarray]:
    """``k`` tokens a sampling drafter draws over random logits, with their float32 rows."""
    tokens, rows = [], []
    for _ in range(k):
        logits = rng.standard_normal(vocab) * rng.uniform(0.5, 4.0)
        probs = np.exp(logits - logits.max())
        token, q = draft_sample(probs / probs.sum(), rng, vocab)
        tokens.append(token)
        rows.append(q)
    return tuple(tokens), np.stack(rows)


def _verdicts(call: VerifyCall, vocab: int, logits: np.ndarray, seed: int) -> tuple[Verdict, ...]:
    rule = ExactRule()
    received = _as_received(call, vocab)
    rule.check(received, SAMPLED, vocab)
    return tuple(
        rule.verdict(c, SAMPLED, HostRows(logits), np.random.default_rng(seed))
        for c in (call, received)
    )


def test_compact_rows_give_the_dense_rows_verdict_token_for_token() -> None:
    rng = np.random.default_rng(7)
    rejected = accepted_all = 0
    for seed in range(300):
        vocab, k = int(rng.integers(2, 40)), int(rng.integers(1, 6))
        tokens, rows = _block(rng, k, vocab)
        logits = rng.standard_normal((k + 1, vocab)).astype(np.float32) * 3
        logits[:k] = np.log(rows + 1e-3) + rng.normal(0, 0.3, (k, vocab))  # p near q
        dense, compact = _verdicts(VerifyCall("s", 3, tokens, rows), vocab, logits, seed)
        assert compact == dense
        rejected += dense.result.first_rejection is not None
        accepted_all += dense.result.first_rejection is None
    assert rejected > 30 and accepted_all > 30  # both ends of the verifier were reached


@pytest.mark.parametrize("seed", range(4))
def test_at_gemma_3s_vocabulary_too(seed: int) -> None:
    vocab, rng = 262_144, np.random.default_rng(seed)
    tokens, rows = _block(rng, 4, vocab)
    logits = rng.standard_normal((5, vocab)).astype(np.float32) * 4
    dense, compact = _verdicts(VerifyCall("s", 3, tokens, rows), vocab, logits, seed)
    assert compact == dense


def _bad_rows() -> list[tuple[tuple[int, ...], list[list[float]]]]:
    return [
        ((1,), [[0.0, 1.0, -0.5, 0.5]]),
        ((1,), [[0.0, float("nan"), 0.0, 1.0]]),
        ((1, 0), [[0.0, 1.0, 0.0, 0.0], [0.5, 0.4, 0.0, 0.0]]),
        ((1, 0), [[0.0, 1.0005, 0.0, 0.0], [0.9995, 0.0, 0.0, 0.0]]),  # within tolerance
        ((2,), [[0.5, 0.5, 0.0, 0.0]]),
    ]


@pytest.mark.parametrize(("tokens", "rows"), _bad_rows())
def test_compact_rows_are_checked_as_their_dense_rows(
    tokens: tuple[int, ...], rows: list[list[float]]
) -> None:
    dense = VerifyCall("s", 3, tokens, np.array(rows, np.float32))
    outcomes: list[tuple[ErrorCode, str] | None] = []
    for call in (dense, _as_received(dense, 4)):
        try:
            check_draft_probs(call, 4)
            outcomes.append(None)
        except RequestError as exc:
            outcomes.append((exc.code, exc.message))
    assert outcomes[0] == outcomes[1]


def test_a_compact_q_reads_as_its_dense_rows() -> None:
    ids, values = np.array([1, 3, 2], np.int32), np.array([0.25, 0.75, 1.0], np.float32)
    q = CompactProbs(np.array([0, 2, 3]), ids, values, 5)
    np.testing.assert_array_equal(q.dense(), [[0, 0.25, 0, 0.75, 0], [0, 0, 1.0, 0, 0]])
    assert (q.shape, q.prob(0, 3), q.prob(0, 2), q.prob(1, 2)) == ((2, 5), 0.75, 0.0, 1.0)
    np.testing.assert_array_equal(q.drawn().row(0), [0, 0.25, 0, 0.75, 0])
    np.testing.assert_array_equal(q.row_sums(), [1.0, 1.0])


@pytest.mark.parametrize("vocab", [37, 262_144])
def test_a_row_as_drawn_is_the_dense_row_as_drawn_bit_for_bit(vocab: int) -> None:
    rng = np.random.default_rng(vocab)
    tokens, rows = _block(rng, 4, vocab)
    q = _as_received(VerifyCall("s", 3, tokens, rows), vocab).draft_probs
    assert isinstance(q, CompactProbs)
    dense, drawn = as_drawn(rows), q.drawn()
    for i, token in enumerate(tokens):
        assert np.array_equal(drawn.row(i), dense[i])
        for t in (token, (token + 1) % vocab):  # in the row's support, and (likely) not
            assert drawn.prob(i, t) == dense[i, t]
