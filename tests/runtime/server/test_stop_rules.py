"""Where a session's output ends on the server: at its ``stop_token_ids`` (committed, then
finished, EOS ignored or not), and not before ``min_tokens`` output tokens: the tokens it
would end at get no probability in the rows before then, each row after its own draft
prefix (the oracle: target-only greedy decoding with those tokens masked)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from edgespec.core.types import SamplingParams
from edgespec.runtime.backends.ngram import NgramDrafter
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.errors import RequestError
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyOutcome
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.testing import tiny_llama
from edgespec.runtime.wire.inprocess import speculative_generate, target_greedy_decode
from tests.runtime.greedy_oracles import masked_greedy

PROMPT = (40, 2, 33, 17, 8, 2)


def _plain() -> tuple[int, ...]:
    return target_greedy_decode(TransformersTarget(tiny_llama(seed=1), frozenset()), PROMPT, 16)


@pytest.mark.parametrize("drafter", ["ngram", "model"])
@pytest.mark.parametrize("min_tokens", [0, 3, 10])
def test_no_eos_before_min_tokens(drafter: str, min_tokens: int) -> None:
    eos = _plain()[2]  # greedy decoding commits it third
    target = TransformersTarget(tiny_llama(seed=1), eos_token_ids=frozenset({eos}))
    expected = masked_greedy(target, PROMPT, frozenset({eos}), min_tokens, 16)
    assert len(expected) == (3 if min_tokens == 0 else len(expected)) >= min_tokens + 1
    draft = NgramDrafter() if drafter == "ngram" else TransformersDraft(tiny_llama(seed=0))
    sampling = SamplingParams(max_new_tokens=16, min_tokens=min_tokens)
    assert speculative_generate(target, draft, PROMPT, 4, sampling).output_token_ids == expected


@pytest.mark.parametrize("ignore_eos", [False, True])
def test_a_stop_token_is_committed_and_ends_the_session(ignore_eos: bool) -> None:
    plain = _plain()
    stop = plain[4]
    assert stop not in plain[:4]
    target = TransformersTarget(tiny_llama(seed=1), eos_token_ids=frozenset({plain[1]}))
    sampling = SamplingParams(max_new_tokens=16, stop_token_ids=(stop,), ignore_eos=ignore_eos)
    out = speculative_generate(target, NgramDrafter(), PROMPT, 4, sampling).output_token_ids
    assert out == (plain[:5] if ignore_eos else plain[:2])  # the EOS first, unless ignored


@pytest.mark.parametrize(("min_tokens", "accepted"), [(2, True), (3, False)])
def test_each_row_is_masked_after_its_own_draft_prefix(min_tokens: int, accepted: bool) -> None:
    """A block drafting the right two tokens then the stop token: row 2 follows two output
    tokens, so it may end there when min_tokens is 2, not when it is 3."""
    plain = _plain()
    stop = plain[2]
    engine = VerificationEngine(TransformersTarget(tiny_llama(seed=1), frozenset()))
    sampling = SamplingParams(max_new_tokens=8, stop_token_ids=(stop,), min_tokens=min_tokens)
    engine.open_session(SessionSpec("s", "c", PROMPT, sampling))
    call = VerifyCall("s", len(PROMPT), (plain[0], plain[1], stop))
    outcome = engine.verify_batch([call])[0]
    assert isinstance(outcome, VerifyOutcome)
    assert (outcome.result.num_accepted == 3, outcome.finished) == (accepted, accepted)
    if not accepted:  # the correction: the likeliest token but the stop one
        target = TransformersTarget(tiny_llama(seed=1), frozenset())
        assert outcome.committed_token_ids == masked_greedy(target, PROMPT, frozenset({stop}), 3, 3)


def test_sampling_draws_no_end_before_min_tokens() -> None:
    """60 seeded runs that end early often without min_tokens never do with it."""
    target = TransformersTarget(tiny_llama(seed=3, vocab_size=6, logit_scale=1.5),
                                eos_token_ids=frozenset({1}))  # fmt: skip
    lengths: dict[int, list[int]] = {0: [], 4: []}
    for seed in range(60):
        for min_tokens in lengths:
            sampling = SamplingParams(temperature=1.0, max_new_tokens=6, seed=seed,
                                      stop_token_ids=(2,), min_tokens=min_tokens)  # fmt: skip
            out = speculative_generate(target, NgramDrafter(vocab_size=6), (3, 4), 3, sampling)
            lengths[min_tokens].append(len(out.output_token_ids))
            assert not set(out.output_token_ids[:min_tokens]) & {1, 2}
    assert min(lengths[4]) >= 5 and sum(n < 5 for n in lengths[0]) > 20


def test_a_stop_id_outside_the_vocabulary_is_refused_at_open() -> None:
    engine = VerificationEngine(TransformersTarget(tiny_llama(seed=1)))
    sampling = SamplingParams(max_new_tokens=4, stop_token_ids=(3, 64))
    with pytest.raises(RequestError) as info:
        engine.open_session(SessionSpec("s", "c", PROMPT, sampling))
    assert str(info.value) == (
        "INVALID_ARGUMENT: stop token 1 (id 64) is outside the vocabulary [0, 64)"
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"min_tokens": 5}, "min_tokens must be in [0, max_new_tokens = 4], got 5"),
        ({"stop_token_ids": (5, 3)}, "stop_token_ids must be token ids in [0, 2**32), once "
                                     "each, ascending, got [5, 3]"),
        ({"stop_token_ids": tuple(range(129))}, "stop_token_ids names at most 128 tokens, got 129"),
    ],
)  # fmt: skip
def test_sampling_params_refuse_stops_the_wire_cannot_carry(
    change: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError) as info:
        dataclasses.replace(SamplingParams(max_new_tokens=4), **change)
    assert str(info.value) == message
