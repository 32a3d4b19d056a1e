"""Stochastic verification reproduces the target's sampling distribution, its rows cut by
top-k, top-p and min-p and penalized when a request asks: a model draft proposes from its
own rows cut and penalized alike (runtime/backends/draft_shaping.py), prompt lookup from
point masses the cuts may have dropped from the target's rows."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from edgespec.core.types import SamplingParams
from edgespec.runtime.backends.base import ForwardItem
from edgespec.runtime.backends.ngram import NgramDrafter
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.sampling import logits_to_probs
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.testing import tiny_llama
from edgespec.runtime.wire.inprocess import speculative_generate
from tests.runtime.greedy_oracles import Penalties, penalized

scipy_stats = pytest.importorskip("scipy.stats")

VOCAB = 6
PROMPT = (1, 2, 3)
TEMPERATURE = 1.0


CUTS: dict[str, dict[str, float]] = {
    "none": {},
    "top_k": {"top_k": 3},
    "all": {"top_k": 4, "top_p": 0.8, "min_p": 0.3},
    "penalties": {"repetition_penalty": 1.4, "frequency_penalty": 0.7, "presence_penalty": 0.5},
}
"""The cuts (and penalties) a run samples with (SamplingParams fields)."""
FIRST_SEED = {"penalties": 10_000}
"""Where a case's seeds start (0 unless named): the penalized case's own uniforms, not the
others' (its outcomes would otherwise move with theirs)."""


def _joint(target: TransformersTarget, cuts: dict[str, float]) -> np.ndarray:
    """Exact P(y1, y2 | prompt) under the target at TEMPERATURE, its rows penalized and cut
    by ``cuts``."""
    penalties: Penalties = (
        cuts.get("repetition_penalty", 1.0),
        cuts.get("frequency_penalty", 0.0),
        cuts.get("presence_penalty", 0.0),
    )
    cut = {k: v for k, v in cuts.items() if not k.endswith("_penalty")}

    def probs(logits: np.ndarray, context: tuple[int, ...]) -> np.ndarray:
        row = penalized(logits[-1], context, len(PROMPT), penalties)  # OFF: as it is
        probs: np.ndarray = logits_to_probs(row[None, :], TEMPERATURE, **cut)[0]  # type: ignore[arg-type]
        return probs

    first = target.forward([ForwardItem(None, 0, PROMPT, 1)])[0]
    p1 = probs(first.logits, PROMPT)
    joint = np.zeros((VOCAB, VOCAB))
    for y1 in range(VOCAB):
        out = target.forward([ForwardItem(first.kv, len(PROMPT), (y1,), 1)])[0]
        joint[y1] = p1[y1] * probs(out.logits, (*PROMPT, y1))
    return joint


@pytest.mark.parametrize(
    ("drafter_kind", "cut"),
    [
        ("model", "none"),
        ("ngram", "none"),
        ("model", "top_k"),
        ("model", "all"),
        ("ngram", "all"),
        ("model", "penalties"),
    ],
)
def test_two_token_distribution_matches_target(drafter_kind: str, cut: str) -> None:
    target = TransformersTarget(tiny_llama(seed=3, vocab_size=VOCAB, logit_scale=1.5))
    draft_model = tiny_llama(seed=4, vocab_size=VOCAB, logit_scale=1.5)
    joint = _joint(target, CUTS[cut])
    assert (joint == 0).any() == (cut not in ("none", "penalties"))  # cuts drop tokens
    counts = np.zeros((VOCAB, VOCAB))
    engine = VerificationEngine(target)
    num_runs = 1500
    accepted = 0
    for seed in range(FIRST_SEED.get(cut, 0), FIRST_SEED.get(cut, 0) + num_runs):
        drafter = (
            TransformersDraft(draft_model)
            if drafter_kind == "model"
            else NgramDrafter(max_ngram=2, vocab_size=VOCAB)
        )
        sampling = SamplingParams(temperature=TEMPERATURE, max_new_tokens=2, seed=seed,
                                  **CUTS[cut])  # type: ignore[arg-type]  # fmt: skip
        result = speculative_generate(target, drafter, PROMPT, 2, sampling, engine=engine)
        y1, y2 = result.output_token_ids
        counts[y1, y2] += 1
        accepted += result.request.num_accepted
    assert accepted > 0  # drafts do get accepted, so the accept path is exercised
    assert not counts[joint == 0].any()  # no token a cut dropped is ever output
    expected = joint[joint > 0] * num_runs  # the cut cells: none drawn (above)
    observed = counts[joint > 0]
    # pool cells with small expectations so the chi-square approximation holds
    small = expected < 5
    exp, obs = expected[~small], observed[~small]
    if small.any():
        exp, obs = np.append(exp, expected[small].sum()), np.append(obs, observed[small].sum())
    result = scipy_stats.chisquare(obs, exp)
    assert result.pvalue > 1e-3, (result, list(itertools.islice(zip(obs, exp, strict=True), 10)))


def test_stochastic_verification_is_not_greedy() -> None:
    """Sanity: at temperature 1 the outputs vary with the seed (the test above is live)."""
    target = TransformersTarget(tiny_llama(seed=3, vocab_size=VOCAB, logit_scale=1.5))
    outs = {
        speculative_generate(
            target,
            NgramDrafter(vocab_size=VOCAB),
            PROMPT,
            2,
            SamplingParams(temperature=1.0, max_new_tokens=2, seed=s),
        ).output_token_ids
        for s in range(20)
    }
    assert len(outs) > 3
