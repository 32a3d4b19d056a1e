"""Repetition, frequency and presence penalties on the server's one verification path:
greedy decoding takes the penalized argmax (the oracle: target-only decoding with the
penalties written out token by token), a tree's rows follow their own paths, a reopened
session counts its prior output as output, and the ranges are refused as they enter."""

from __future__ import annotations

import pytest

from edgespec.core.types import SamplingParams
from edgespec.runtime.backends.ngram import NgramDrafter
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.errors import RequestError
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyOutcome
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.logits_processing import draft_paths
from edgespec.runtime.testing import tiny_llama
from edgespec.runtime.wire.inprocess import speculative_generate, target_greedy_decode
from tests.runtime.greedy_oracles import Penalties, penalized_greedy

PROMPT = (40, 2, 33, 17, 8, 2)


def _sampling(penalties: Penalties, **kw: int) -> SamplingParams:
    repetition, frequency, presence = penalties
    return SamplingParams(repetition_penalty=repetition, frequency_penalty=frequency,
                          presence_penalty=presence, **kw)  # type: ignore[arg-type]  # fmt: skip


@pytest.mark.parametrize("drafter", ["ngram", "model"])
@pytest.mark.parametrize("penalties", [(1.5, 0.0, 0.0), (1.0, 2.0, 0.0), (1.0, 0.0, 2.0),
                                       (0.7, -0.5, 1.0)])  # fmt: skip
def test_greedy_decoding_takes_the_penalized_argmax(drafter: str, penalties: Penalties) -> None:
    target = TransformersTarget(tiny_llama(seed=0), eos_token_ids=frozenset())
    plain = target_greedy_decode(target, PROMPT, 16)
    expected = penalized_greedy(target, PROMPT, penalties, 16)
    assert expected != plain  # the penalties change the output
    draft = NgramDrafter() if drafter == "ngram" else TransformersDraft(tiny_llama(seed=1))
    out = speculative_generate(target, draft, PROMPT, 4, _sampling(penalties, max_new_tokens=16))
    assert out.output_token_ids == expected


def _decode(engine: VerificationEngine, spec: SessionSpec) -> tuple[int, ...]:
    """The session's output, one target token per (empty) verification."""
    engine.open_session(spec)
    output: list[int] = []
    while not engine.session_finished(spec.session_id):
        outcome = engine.verify_batch([VerifyCall(spec.session_id, len(spec.prompt_token_ids)
                                                  + len(output), ())])[0]  # fmt: skip
        assert isinstance(outcome, VerifyOutcome)
        output.extend(outcome.committed_token_ids)
    return tuple(output)


def test_a_reopened_session_counts_its_prior_output_as_output() -> None:
    """What a reconnect opens: the prompt and the output so far as the new prompt, the
    output counted as output (frequency and presence apply to it, not to the prompt)."""
    target = TransformersTarget(tiny_llama(seed=0), eos_token_ids=frozenset())
    engine = VerificationEngine(target)
    penalties = (1.0, 1.0, 1.0)
    whole = _decode(engine, SessionSpec("a", "c", PROMPT, _sampling(penalties, max_new_tokens=12)))
    assert whole == penalized_greedy(target, PROMPT, penalties, 12)
    rest = _sampling(penalties, max_new_tokens=7)
    resumed = (*PROMPT, *whole[:5])
    spec = SessionSpec("b", "c", resumed, rest, num_prior_output_tokens=5)
    assert _decode(engine, spec) == whole[5:]
    as_prompt = _decode(engine, SessionSpec("p", "c", resumed, rest))  # the output as prompt
    assert as_prompt == penalized_greedy(target, resumed, penalties, 7) != whole[5:]


def test_each_tree_row_follows_its_own_path() -> None:
    assert draft_paths((7, 8, 9), None) == [(), (7,), (7, 8), (7, 8, 9)]
    assert draft_paths((7, 8, 9, 5), (-1, -1, 0, 2)) == [(), (7,), (8,), (7, 9), (7, 9, 5)]


def test_a_tree_verifies_against_the_penalized_rows() -> None:
    """A tree that follows the penalized greedy continuation to where the plain one parts
    from it, then holds both (the plain token first) and the penalized one's next tokens:
    the penalized path is accepted, whole, and its bonus token is the penalized one."""
    target = TransformersTarget(tiny_llama(seed=0), eos_token_ids=frozenset())
    penalties = (1.0, 2.0, 2.0)
    right = penalized_greedy(target, PROMPT, penalties, 4)
    plain = target_greedy_decode(target, PROMPT, 3)
    d = next(i for i in range(3) if plain[i] != right[i])  # where they part
    draft = (*right[:d], plain[d], *right[d:3])
    parents = (*range(-1, d - 1), d - 1, d - 1, *range(d + 1, 3))
    engine = VerificationEngine(target)
    engine.open_session(SessionSpec("t", "c", PROMPT, _sampling(penalties, max_new_tokens=8)))
    outcome = engine.verify_batch([VerifyCall("t", len(PROMPT), draft, draft_parents=parents)])[0]
    assert isinstance(outcome, VerifyOutcome)
    assert outcome.committed_token_ids == right


def test_prior_output_beyond_the_prompt_is_refused_at_open() -> None:
    engine = VerificationEngine(TransformersTarget(tiny_llama(seed=0)))
    with pytest.raises(RequestError) as info:
        engine.open_session(
            SessionSpec("s", "c", (1, 2), SamplingParams(), num_prior_output_tokens=3)
        )
    assert str(info.value) == (
        "INVALID_ARGUMENT: num_prior_output_tokens must be in [0, 2] (the prompt's tokens), got 3"
    )


RANGE = "must be in [1.175e-38, 3.403e+38] (float32's normal range; 1: off), got"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("repetition_penalty", 0.0, f"repetition_penalty {RANGE} 0"),
        ("repetition_penalty", float("inf"), f"repetition_penalty {RANGE} inf"),
        ("repetition_penalty", 1e-38, f"repetition_penalty {RANGE} 1e-38"),  # float32 denormal
        ("repetition_penalty", 1e39, f"repetition_penalty {RANGE} 1e+39"),  # float32 inf
        ("frequency_penalty", 2.5, "frequency_penalty must be in [-2, 2] (0: off), got 2.5"),
        ("presence_penalty", float("nan"), "presence_penalty must be in [-2, 2] (0: off), got nan"),
    ],
)  # fmt: skip
def test_sampling_params_refuse_a_penalty_out_of_range(
    field: str, value: float, message: str
) -> None:
    with pytest.raises(ValueError) as info:
        SamplingParams(**{field: value})  # type: ignore[arg-type]
    assert str(info.value) == message
