"""``logit_bias``: (token, bias) pairs added to the target's logits before anything else,
greedy decoding and sampling alike, on the server's one verification path; ids checked
against the vocabulary at open; semantic sessions refuse it."""

from __future__ import annotations

import numpy as np
import pytest

from edgespec.core.types import SamplingParams
from edgespec.runtime.backends.base import ForwardItem
from edgespec.runtime.backends.ngram import NgramDrafter
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.errors import RequestError
from edgespec.runtime.messages import SessionSpec
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.testing import tiny_llama
from edgespec.runtime.wire.inprocess import speculative_generate, target_greedy_decode

PROMPT = (40, 2, 33, 17, 8)


def _biased_greedy(
    target: TransformersTarget, bias: tuple[tuple[int, float], ...], n: int
) -> tuple[int, ...]:
    """Target-only greedy decoding of the biased rows: the oracle."""
    kv, kv_len, out = None, 0, []
    pending: tuple[int, ...] = PROMPT
    for _ in range(n):
        row = target.forward([ForwardItem(kv, kv_len, pending, 1)])[0]
        kv, kv_len = row.kv, kv_len + len(pending)
        logits = np.array(row.logits[-1], dtype=np.float32)
        for token, b in bias:
            logits[token] += np.float32(b)
        out.append(int(np.argmax(logits)))
        pending = (out[-1],)
    return tuple(out)


@pytest.mark.parametrize("drafter", ["ngram", "model"])
def test_greedy_decoding_takes_the_biased_argmax(drafter: str) -> None:
    target = TransformersTarget(tiny_llama(seed=0), eos_token_ids=frozenset())
    plain = target_greedy_decode(target, PROMPT, 12)
    bias = tuple(sorted({plain[0]: -100.0, plain[3]: -5.0, 7: 2.5}.items()))  # ban the first
    expected = _biased_greedy(target, bias, 12)
    assert expected[0] != plain[0] and expected != plain
    draft = NgramDrafter() if drafter == "ngram" else TransformersDraft(tiny_llama(seed=1))
    out = speculative_generate(target, draft, PROMPT, 4,
                               SamplingParams(max_new_tokens=12, logit_bias=bias))  # fmt: skip
    assert out.output_token_ids == expected


def test_a_banned_token_is_never_drawn() -> None:
    """Bias -100 on the tokens sampling draws most: none of them in 60 seeded runs, which
    draw them often without it."""
    target = TransformersTarget(tiny_llama(seed=3, vocab_size=6, logit_scale=1.5))
    banned = (1, 2)
    drawn: dict[bool, list[int]] = {True: [], False: []}
    for seed in range(60):
        for ban in (True, False):
            bias = tuple((t, -100.0) for t in banned) if ban else ()
            sampling = SamplingParams(temperature=1.0, max_new_tokens=3, seed=seed, logit_bias=bias)
            out = speculative_generate(target, NgramDrafter(vocab_size=6), (1, 2, 3), 2, sampling)
            drawn[ban].extend(out.output_token_ids)
    assert not set(drawn[True]) & set(banned)
    assert sum(t in banned for t in drawn[False]) > 20


def test_an_id_outside_the_vocabulary_is_refused_at_open() -> None:
    engine = VerificationEngine(TransformersTarget(tiny_llama(seed=0)))
    sampling = SamplingParams(max_new_tokens=4, logit_bias=((3, 1.0), (64, 1.0)))
    with pytest.raises(RequestError) as info:
        engine.open_session(SessionSpec("s", "c", PROMPT, sampling))
    assert str(info.value) == (
        "INVALID_ARGUMENT: logit_bias token 1 (id 64) is outside the vocabulary [0, 64)"
    )


@pytest.mark.parametrize(
    ("bias", "message"),
    [
        (((5, 101.0),), "logit_bias biases must be in [-100, 100], got 101"),
        (((5, float("nan")),), "logit_bias biases must be in [-100, 100], got nan"),
        (((5, 1.0), (3, 1.0)), "logit_bias must name token ids in [0, 2**32) once each, "
                               "ascending, got [5, 3]"),
        (tuple((t, 1.0) for t in range(301)), "logit_bias names at most 300 tokens, got 301"),
    ],
)  # fmt: skip
def test_sampling_params_refuse_a_bias_the_wire_cannot_carry(
    bias: tuple[tuple[int, float], ...], message: str
) -> None:
    with pytest.raises(ValueError) as info:
        SamplingParams(logit_bias=bias)
    assert str(info.value) == message
