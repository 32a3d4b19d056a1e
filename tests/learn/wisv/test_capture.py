"""WISV's dataset capture on tiny in-process models, answer-labelled: the mismatches of the
greedy speculative loop (by hand, as the stop dataset and the runtime replay them), their
hidden states, base labels from batched target-only continuations, outputs that stop when
the outcome is final, and a trimmed draft. Similarity labels:
test_capture_similarity.py; the captured dataset on disk: test_capture_datasets.py."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
import torch

from edgespec.core.types import SamplingParams
from edgespec.learn.stop.data import window_rows
from edgespec.learn.wisv.capture import (
    CaptureSettings,
    RoundMismatch,
    capture_prompt,
    greedy_rounds,
)
from edgespec.learn.wisv.decoding import continue_greedy, draft_states, target_reference
from edgespec.runtime.backends.attention_mask import attention_layout
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.wire.inprocess import speculative_generate, target_greedy_decode
from tests.learn.wisv.capture_setup import NO_EOS, PROMPT, LastToken
from tests.models.tiny import tiny_draft, tiny_target


class StopAt:
    """Final once ``token`` is in the output; the answer is the token before it."""

    def __init__(self, token: int) -> None:
        self.token = token

    def finished(self, output_ids: Sequence[int]) -> bool:
        return self.token in output_ids

    def answer(self, output_ids: Sequence[int]) -> str | None:
        out = list(output_ids)
        at = out.index(self.token) if self.token in out else len(out)
        return str(out[at - 1]) if at else None


def _full_hidden(model: object, ids: Sequence[int]) -> np.ndarray:
    with torch.no_grad():
        out = model.model(input_ids=torch.tensor([list(ids)]))  # type: ignore[attr-defined]
    return np.asarray(out.last_hidden_state[0].numpy())


def test_greedy_rounds_by_hand_and_as_the_stop_dataset_replays_them() -> None:
    flags = [1, 1, 0, 1, 1, 1, 1, 0, 0, 1]
    found, rounds = greedy_rounds([bool(f) for f in flags], 3)
    # rounds: [0,1 ok, 2 ✗] [3,4,5 ok → bonus 6] [7 ✗] [8 ✗] [9: the last token, not drafted]
    assert found == [RoundMismatch(2, 0, 2), RoundMismatch(7, 2, 0), RoundMismatch(8, 3, 0)]
    assert rounds == 5
    rng = np.random.default_rng(0)
    for _ in range(30):
        seq = [int(x) for x in rng.random(int(rng.integers(1, 40))) < 0.7]
        for gamma in (1, 3, 8):
            rejected = [p for p, label in window_rows(seq, gamma) if label == 0]
            got, _ = greedy_rounds([bool(x) for x in seq], gamma)
            assert [m.position for m in got] == rejected
    with pytest.raises(ValueError, match="gamma"):
        greedy_rounds([True], 0)


def test_mismatches_hidden_states_and_labels(pair: tuple[object, object]) -> None:
    target, draft = pair
    layout = attention_layout(target)
    settings = CaptureSettings(gamma=4, max_new_tokens=24)
    found = capture_prompt(target, draft, layout, PROMPT, 7, settings, LastToken(), NO_EOS)
    m = len(found.mismatches)
    assert len(found.output) == 24 and m >= 3
    assert found.draft_hidden.shape == (m, 32) and found.target_hidden.shape == (m, 32)
    positions = [x.position for x in found.mismatches]
    assert found.target_ids == tuple(found.output[p] for p in positions)
    assert all(d != t for d, t in zip(found.draft_ids, found.target_ids, strict=True))
    # hidden states: what one forward of each model over prompt + output gives at the
    # input position whose logits predict the mismatching token
    ids = [*PROMPT, *found.output]
    at = [len(PROMPT) + p - 1 for p in positions]
    np.testing.assert_allclose(found.target_hidden, _full_hidden(target, ids)[at], atol=1e-4)
    np.testing.assert_allclose(found.draft_hidden, _full_hidden(draft, ids)[at], atol=1e-5)
    # base labels: accept d_j at j, continue with the target alone, compare the answers
    backend = TransformersTarget(target)
    reference = LastToken().answer(found.output)
    for mismatch, d, answer, y in zip(
        found.mismatches, found.draft_ids, found.continuation_answers, found.critical, strict=True
    ):
        j = mismatch.position
        rest = 24 - j - 1
        alone = target_greedy_decode(backend, [*PROMPT, *found.output[:j], d], rest) if rest else ()
        expected = LastToken().answer([*found.output[:j], d, *alone])
        assert answer == expected and y == int(expected != reference)
    assert found.agreement == pytest.approx(
        np.mean([a == b for a, b in zip(_draft_greedy(draft, ids), found.output, strict=True)])
    )


def _draft_greedy(draft: object, ids: Sequence[int]) -> list[int]:
    greedy, _ = draft_states(draft, ids[:-1])
    return greedy[len(PROMPT) - 1 :]


def test_mismatches_are_those_of_the_runtime_speculative_loop(pair: tuple[object, object]) -> None:
    target, draft = pair
    layout = attention_layout(target)
    for gamma in (2, 5):
        settings = CaptureSettings(gamma=gamma, max_new_tokens=30)
        found = capture_prompt(target, draft, layout, PROMPT, 0, settings, LastToken(), NO_EOS)
        result = speculative_generate(
            TransformersTarget(target), TransformersDraft(draft), PROMPT, gamma,
            SamplingParams(max_new_tokens=30),
        )  # fmt: skip
        assert result.output_token_ids == found.output  # lossless greedy SD
        positions, start = [], 0
        for r in result.rounds:
            if r.num_accepted < r.num_drafted:
                positions.append(start + r.num_accepted)
            start += r.num_accepted + 1
        assert [m.position for m in found.mismatches] == positions


def test_batched_continuations_equal_target_only_decoding(pair: tuple[object, object]) -> None:
    target, _ = pair
    layout = attention_layout(target)
    ref = target_reference(target, layout, PROMPT, 20, NO_EOS, LastToken())
    assert len(ref.output) == 20 and ref.hidden.shape == (20, 32)
    starts = [(0, 3), (5, 9), (11, 1), (19, 4)]  # the last one leaves no budget
    outputs, decoded = continue_greedy(target, layout, ref, len(PROMPT), starts, 20, NO_EOS,
                                       LastToken())  # fmt: skip
    backend = TransformersTarget(target)
    for (j, d), out in zip(starts, outputs, strict=True):
        alone = (
            target_greedy_decode(backend, [*PROMPT, *ref.output[:j], d], 19 - j) if j < 19 else ()
        )
        assert out == (*ref.output[:j], d, *alone)
    assert decoded == sum(19 - j for j, _ in starts)
    with pytest.raises(ValueError, match="outside"):
        continue_greedy(target, layout, ref, len(PROMPT), [(20, 1)], 20, NO_EOS, LastToken())


def test_outputs_stop_when_the_outcome_is_final(pair: tuple[object, object]) -> None:
    target, draft = pair
    layout = attention_layout(target)
    free = target_reference(target, layout, PROMPT, 24, NO_EOS, LastToken()).output
    stop = free[9]
    first = free.index(stop)
    ref = target_reference(target, layout, PROMPT, 24, NO_EOS, StopAt(stop))
    assert ref.output == free[: first + 1]
    found = capture_prompt(
        target, draft, layout, PROMPT, 0, CaptureSettings(4, 24), StopAt(stop), NO_EOS
    )
    assert found.output == ref.output and found.answer == StopAt(stop).answer(ref.output)


def test_a_trimmed_draft_answers_in_target_ids() -> None:
    target = tiny_target()
    kept = list(range(3, 48))
    draft = tiny_draft(kept)
    found = capture_prompt(
        target, draft, attention_layout(target), (2, *range(10, 20)), 0, CaptureSettings(4, 16),
        LastToken(),
    )  # fmt: skip
    assert found.draft_hidden.shape[1] == 16 and found.target_hidden.shape[1] == 32
    assert all(d in kept for d in found.draft_ids)
    with torch.no_grad():
        ids = torch.tensor([[2, *range(10, 20), *found.output[:-1]]])
        logits, _ = draft.trimmed_forward(ids)
        greedy = draft.to_target_ids(logits[0].argmax(-1)).tolist()[10:]
    assert [greedy[m.position] for m in found.mismatches] == list(found.draft_ids)


def test_continuation_windows_must_be_positive(pair: tuple[object, object]) -> None:
    target, _ = pair
    layout = attention_layout(target)
    ref = target_reference(target, layout, PROMPT, 6, NO_EOS, LastToken())
    with pytest.raises(ValueError, match="window"):
        continue_greedy(target, layout, ref, len(PROMPT), [(0, 1)], 6, NO_EOS, LastToken(), 0)
