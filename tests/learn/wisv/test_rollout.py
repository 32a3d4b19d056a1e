"""WISV's rollout capture: a hand-built pair of toy steppers (exact positions), the head's
rule, and tiny in-process models (the lossless capture as its reject-all case, positions
after accepted mismatches, labels against the original target-only output)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
import torch

from edgespec.learn.wisv.capture import CaptureSettings, RoundMismatch, capture_prompt
from edgespec.learn.wisv.decoding import draft_states, target_reference
from edgespec.learn.wisv.rollout import (
    HeadRule,
    capture_rollout,
    rollout_channel,
    wisv_rollout,
)
from edgespec.learn.wisv.similarity import ContinuationSimilarity, rouge_l_f1
from edgespec.learn.wisv.train import CHANNELS
from edgespec.policies.contracts import PolicyContractError
from edgespec.policies.semantic.csi import ChannelState
from edgespec.policies.semantic.head import DecisionHead
from edgespec.policies.semantic.relabel import sample_channel
from edgespec.runtime.backends.attention_mask import attention_layout
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.learn.wisv.capture_setup import NO_EOS, PROMPT, LastToken
from tests.policies.semantic.broken_heads import BROKEN_ANSWERS, broken_head, contract_message


class Toy:
    """A hand-built model: greedy next = last + 1, except after a token in ``jumps``
    (next = last + 3). Its hidden state is [output position, last token]."""

    def __init__(self, jumps: frozenset[int] = frozenset()) -> None:
        self.jumps = jumps
        self.seq: list[int] = []
        self.prompt = 0

    def _next(self) -> tuple[int, np.ndarray]:
        last = self.seq[-1]
        hidden = np.asarray([len(self.seq) - self.prompt, last], dtype=np.float32)
        return last + (3 if last in self.jumps else 1), hidden

    def start(self, prompt_ids: Sequence[int]) -> tuple[int, np.ndarray]:
        self.seq, self.prompt = list(prompt_ids), len(prompt_ids)
        return self._next()

    def step(self, token: int) -> tuple[int, np.ndarray]:
        self.seq.append(token)
        return self._next()


class AcceptAt:
    """Accepts the mismatches at the given output positions (read from the draft's state)."""

    def __init__(self, positions: set[int]) -> None:
        self.positions = positions
        self.seen: list[int] = []

    def rejects(self, draft_hidden: np.ndarray, target_hidden: np.ndarray) -> bool:
        self.seen.append(int(draft_hidden[0]))
        return int(draft_hidden[0]) not in self.positions


class Never:
    def finished(self, output_ids: Sequence[int]) -> bool:
        return False


def test_a_hand_built_rollout_reaches_positions_after_an_accepted_mismatch() -> None:
    # target: 1, 2 → 3 4 5 6 7 8 …; the draft jumps by 3 after a 4 or an 8
    rule = AcceptAt({2})
    roll = wisv_rollout(Toy(), Toy(frozenset({4, 8})), (1, 2), 3, 10, NO_EOS, Never(), rule)
    # round 0 drafts 3: 3 ✓, 4 ✓, 7 (target 5) accepted at j = 2, then the target's bonus 8
    # round 1: after 8 the draft says 11, the target 9: rejected at j = 4 (offset 0)
    # round 2: 10 11 12 ✓ + bonus 13; round 3 drafts none (one token left): 14
    assert roll.output == (3, 4, 7, 8, 9, 10, 11, 12, 13, 14)
    assert [m.at for m in roll.met] == [RoundMismatch(2, 0, 2), RoundMismatch(4, 1, 0)]
    assert [m.accepted for m in roll.met] == [True, False]
    assert [(m.draft_id, m.target_id) for m in roll.met] == [(7, 5), (11, 9)]
    assert rule.seen == [2, 4] and roll.num_rounds == 4
    assert roll.agreement == pytest.approx(0.8)
    np.testing.assert_array_equal(roll.target_hidden[:, 1], [2, 3, 4, 7, 8, 9, 10, 11, 12, 13])
    # rejecting everything is lossless SD: only j = 2 (after 8 comes a bonus position)
    lossless = wisv_rollout(Toy(), Toy(frozenset({4, 8})), (1, 2), 3, 10, NO_EOS, Never(),
                            AcceptAt(set()))  # fmt: skip
    assert lossless.output == tuple(range(3, 13))
    assert [m.at for m in lossless.met] == [RoundMismatch(2, 0, 2)]
    # EOS ends the rollout on the committed token; the round in progress counts
    stop = wisv_rollout(Toy(), Toy(frozenset({4})), (1, 2), 3, 10, frozenset({8}), Never(), rule)
    assert stop.output == (3, 4, 7, 8) and stop.num_rounds == 1
    with pytest.raises(ValueError, match="gamma"):
        wisv_rollout(Toy(), Toy(), (1, 2), 0, 10, NO_EOS, Never(), rule)


def test_the_head_rule_rejects_iff_p_reaches_the_threshold() -> None:
    d, t = 3, 2
    logit = np.log(0.7 / 0.3)  # p = 0.7 everywhere
    head = DecisionHead(
        d, t, np.zeros(d + t + 4), np.ones(d + t + 4), np.zeros((d + t + 4, 2)), np.zeros(2),
        np.zeros((2, 1)), np.asarray([logit]),
    )  # fmt: skip
    channel = ChannelState(uplink_bps=20e6, per=0.0, rtt_s=0.05)
    hd, ht = np.ones(d, dtype=np.float32), np.ones(t, dtype=np.float32)
    assert HeadRule(head, channel, 11).rejects(hd, ht)  # τ = 0.6875 ≤ 0.7
    assert not HeadRule(head, channel, 12).rejects(hd, ht)  # τ = 0.75
    assert rollout_channel("poor", 0, 5) == CHANNELS["poor"]
    assert rollout_channel("draw", 3, 5) == sample_channel(np.random.default_rng([3, 5]))
    assert rollout_channel("draw", 3, 5) != rollout_channel("draw", 3, 6)
    with pytest.raises(ValueError, match="unknown rollout channel 'fair'"):
        rollout_channel("fair", 0, 0)


class RejectAll:
    def rejects(self, draft_hidden: np.ndarray, target_hidden: np.ndarray) -> bool:
        return True


class AcceptFirst:
    """Accepts the first ``count`` mismatches met, rejects the rest."""

    def __init__(self, count: int = 1) -> None:
        self.left = count

    def rejects(self, draft_hidden: np.ndarray, target_hidden: np.ndarray) -> bool:
        self.left -= 1
        return self.left < 0


def test_rejecting_every_mismatch_is_the_lossless_capture(pair: tuple[object, object]) -> None:
    target, draft = pair
    layout = attention_layout(target)
    settings = CaptureSettings(gamma=4, max_new_tokens=24)
    lossless = capture_prompt(target, draft, layout, PROMPT, 3, settings, LastToken(), NO_EOS)
    rolled = capture_rollout(
        target, draft, layout, PROMPT, 3, settings, LastToken(), RejectAll(), NO_EOS
    )
    m = len(lossless.mismatches)
    assert rolled.output == lossless.output and rolled.mismatches == lossless.mismatches
    assert m >= 3 and rolled.num_rounds == lossless.num_rounds
    assert rolled.critical == lossless.critical and rolled.answer == lossless.answer
    assert rolled.draft_ids == lossless.draft_ids and rolled.target_ids == lossless.target_ids
    np.testing.assert_allclose(rolled.draft_hidden, lossless.draft_hidden, atol=1e-5)
    np.testing.assert_allclose(rolled.target_hidden, lossless.target_hidden, atol=1e-5)
    assert rolled.accepted == rolled.off_reference == (0,) * m
    assert rolled.local_critical == rolled.critical
    assert rolled.agreement == pytest.approx(lossless.agreement)


def _greedy(model: object, ids: Sequence[int]) -> int:
    with torch.no_grad():
        return int(model(torch.tensor([list(ids)])).logits[0, -1].argmax())  # type: ignore[operator]


def _brute_force_wisv(
    target: object, draft: object, gamma: int, limit: int, accept: int
) -> tuple[list[int], list[tuple[int, bool]]]:
    """WISV with full forwards at every step: the first ``accept`` mismatches accepted."""
    output: list[int] = []
    met: list[tuple[int, bool]] = []
    start, block = 0, min(gamma, limit - 1)
    while len(output) < limit:
        j = len(output)
        t = _greedy(target, [*PROMPT, *output])
        d = draft_states(draft, [*PROMPT, *output])[0][-1]
        token, ends = t, True
        if j - start < block:
            ends = d != t and len(met) >= accept
            if d != t:
                met.append((j, not ends))
            token = t if ends else d
        output.append(token)
        if ends:
            start, block = j + 1, min(gamma, limit - j - 2)
    return output, met


def test_the_rollout_captures_mismatches_after_accepted_ones_labelled_against_the_reference(
    pair: tuple[object, object],
) -> None:
    target, draft = pair
    layout = attention_layout(target)
    settings = CaptureSettings(gamma=4, max_new_tokens=24)
    found = capture_rollout(
        target, draft, layout, PROMPT, 0, settings, LastToken(), AcceptFirst(2), NO_EOS
    )
    output, met = _brute_force_wisv(target, draft, 4, 24, 2)
    assert list(found.output) == output
    accepted_flags = found.accepted or ()
    assert [
        (m.position, bool(a)) for m, a in zip(found.mismatches, accepted_flags, strict=True)
    ] == met
    reference = target_reference(target, layout, PROMPT, 24, NO_EOS, LastToken()).output
    first = met[0][0]
    after = [m.position for m in found.mismatches if m.position > first]
    assert after and found.output[:first] == reference[:first]
    assert found.off_reference == tuple(int(m.position > first) for m in found.mismatches)
    backend = TransformersTarget(target)
    answer = LastToken().answer(reference)
    assert found.answer == answer
    rows = zip(found.mismatches, found.draft_ids, found.target_ids, strict=True)
    for k, (mismatch, d, t) in enumerate(rows):
        j, rest = mismatch.position, 24 - mismatch.position - 1
        prefix = [*PROMPT, *found.output[:j]]
        accepted = LastToken().answer(
            [*found.output[:j], d, *target_greedy_decode(backend, [*prefix, d], rest)]
        )
        assert found.continuation_answers[k] == accepted
        assert found.critical[k] == int(accepted != answer)  # against the original output
        rejected = LastToken().answer(
            [*found.output[:j], t, *target_greedy_decode(backend, [*prefix, t], rest)]
        )
        local = int(accepted != (rejected if j > first else answer))
        assert (found.local_critical or ())[k] == local


def test_similarity_labels_compare_with_the_reference_windows(pair: tuple[object, object]) -> None:
    target, draft = pair
    layout = attention_layout(target)
    criterion = ContinuationSimilarity(window=8)
    found = capture_rollout(
        target, draft, layout, PROMPT, 0, CaptureSettings(4, 24), criterion, AcceptFirst(1), NO_EOS
    )
    reference = target_reference(target, layout, PROMPT, 24, NO_EOS, criterion).output
    backend = TransformersTarget(target)
    assert found.similarity is not None and any(found.off_reference or ())
    for mismatch, d, f1, y in zip(
        found.mismatches, found.draft_ids, found.similarity, found.critical, strict=True
    ):
        j = mismatch.position
        rest = min(8, 24 - j) - 1
        alone = target_greedy_decode(backend, [*PROMPT, *found.output[:j], d], rest) if rest else ()
        expected = rouge_l_f1(reference[j : j + 8], (d, *alone))
        assert f1 == pytest.approx(expected) and y == int(expected < 0.5)


@pytest.mark.parametrize("name", sorted(BROKEN_ANSWERS))
def test_the_head_rule_refuses_an_answer_out_of_contract(name: str) -> None:
    """One mismatch asked, not one bool answered: the shared check's one-line error (the
    rule read ``[0]`` of whatever came back)."""
    rule = HeadRule(broken_head(name), ChannelState(uplink_bps=20e6), 12)
    with pytest.raises(PolicyContractError) as caught:
        rule.rejects(np.ones(8, dtype=np.float32), np.ones(12, dtype=np.float32))
    assert str(caught.value) == contract_message(name, 1)
