"""WISV's capture with continuation-similarity base labels on tiny in-process models: each
mismatch's swapped window scored against target-only decoding, and a one-token window
that makes every mismatch critical."""

from __future__ import annotations

import pytest

from edgespec.learn.wisv.capture import CaptureSettings, capture_prompt
from edgespec.learn.wisv.similarity import ContinuationSimilarity, rouge_l_f1
from edgespec.runtime.backends.attention_mask import attention_layout
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.learn.wisv.capture_setup import NO_EOS, PROMPT


@pytest.mark.parametrize("window", [8, 32])
def test_similarity_labels_against_target_only_decoding(
    pair: tuple[object, object], window: int
) -> None:
    """Each mismatch's swapped window (d_j, then the target alone) decoded independently,
    scored against the reference's window; continuations stop ``window`` tokens after j."""
    target, draft = pair
    layout = attention_layout(target)
    criterion = ContinuationSimilarity(window=window)
    found = capture_prompt(
        target, draft, layout, PROMPT, 3, CaptureSettings(4, 24), criterion, NO_EOS
    )
    m = len(found.mismatches)
    assert len(found.output) == 24 and m >= 3  # never final early: decoded to the limit
    assert found.answer is None and found.continuation_answers == (None,) * m
    assert found.similarity is not None and len(found.similarity) == m
    backend = TransformersTarget(target)
    budget = 0
    for mismatch, d, f1, y in zip(
        found.mismatches, found.draft_ids, found.similarity, found.critical, strict=True
    ):
        j = mismatch.position
        rest = min(window, 24 - j) - 1
        budget += rest
        alone = target_greedy_decode(backend, [*PROMPT, *found.output[:j], d], rest) if rest else ()
        expected = rouge_l_f1(found.output[j : j + window], (d, *alone))
        assert f1 == pytest.approx(expected) and y == int(expected < 0.5)
    assert found.continuation_tokens == budget


def test_a_one_token_window_makes_every_mismatch_critical(pair: tuple[object, object]) -> None:
    """With W = 1 the windows are (O[j],) and (d_j,), which always differ: F1 0."""
    target, draft = pair
    found = capture_prompt(
        target, draft, attention_layout(target), PROMPT, 0, CaptureSettings(4, 24),
        ContinuationSimilarity(window=1), NO_EOS,
    )  # fmt: skip
    assert len(found.mismatches) >= 3 and found.continuation_tokens == 0
    assert found.similarity == (0.0,) * len(found.mismatches)
    assert found.critical == (1,) * len(found.mismatches)
