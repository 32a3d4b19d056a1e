"""Stochastic verification reproduces the target's sampling distribution, its rows cut by
top-k, top-p and min-p and penalized when a request asks: a model draft proposes from its
own rows cut and penalized alike (runtime/backends/draft_shaping.py), prompt lookup from
point masses the cuts may have dropped from the target's rows, and the model with lookup
first from both in one block."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from edgespec.core.types import SamplingParams
from edgespec.runtime.backends.base import ForwardItem
from edgespec.runtime.backends.hybrid_draft import HybridDraft
from edgespec.runtime.backends.ngram import NgramDrafter
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.backends.tree_draft import TreeDraft
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


def _joint(target: TransformersTarget, cuts: dict[str, float], num_tokens: int = 2) -> np.ndarray:
    """Exact P(y1, …, y_n | prompt) under the target at TEMPERATURE, its rows penalized and
    cut by ``cuts``."""
    penalties: Penalties = (
        cuts.get("repetition_penalty", 1.0),
        cuts.get("frequency_penalty", 0.0),
        cuts.get("presence_penalty", 0.0),
    )
    cut = {k: v for k, v in cuts.items() if not k.endswith("_penalty")}
    joint = np.zeros((VOCAB,) * num_tokens)

    def fill(output: tuple[int, ...], mass: float) -> None:
        if len(output) == num_tokens:
            joint[output] = mass
            return
        context = (*PROMPT, *output)
        logits = target.forward([ForwardItem(None, 0, context, 1)])[0].logits
        row = penalized(logits[-1], context, len(PROMPT), penalties)  # OFF: as it is
        probs = logits_to_probs(row[None, :], TEMPERATURE, **cut)[0]  # type: ignore[arg-type]
        for token in np.flatnonzero(probs):
            fill((*output, int(token)), mass * float(probs[token]))

    fill((), 1.0)
    return joint


def _assert_drawn_as(counts: np.ndarray, joint: np.ndarray, num_runs: int) -> None:
    """``counts`` of ``num_runs`` outputs are draws of ``joint``: none where it is 0, and a
    chi-square test's p-value above 1e-3 elsewhere."""
    assert not counts[joint == 0].any()  # no token a cut dropped is ever output
    expected = joint[joint > 0] * num_runs
    observed = counts[joint > 0]
    # pool cells with small expectations so the chi-square approximation holds
    small = expected < 5
    exp, obs = expected[~small], observed[~small]
    if small.any():
        exp, obs = np.append(exp, expected[small].sum()), np.append(obs, observed[small].sum())
    result = scipy_stats.chisquare(obs, exp)
    assert result.pvalue > 1e-3, (result, list(itertools.islice(zip(obs, exp, strict=True), 10)))


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
    _assert_drawn_as(counts, joint, num_runs)


def test_a_model_draft_with_lookup_first_keeps_the_targets_distribution() -> None:
    """HybridDraft sampling: a block's first token drawn from the model (the prompt's last
    token has not occurred before), its second looked up where the first repeats a prompt
    token (a 1-gram: q a point mass) and drawn from the model elsewhere; the three tokens
    of the output are the target's draws (with the lookup's q taken from the model instead,
    p = 0.0)."""
    target = TransformersTarget(tiny_llama(seed=3, vocab_size=VOCAB, logit_scale=1.5))
    draft_model = tiny_llama(seed=4, vocab_size=VOCAB, logit_scale=1.5)
    joint = _joint(target, {}, num_tokens=3)
    counts = np.zeros_like(joint)
    engine = VerificationEngine(target)
    num_runs, certain = 1500, list[bool]()
    for seed in range(20_000, 20_000 + num_runs):
        drafter = _Certain(draft_model, certain)
        sampling = SamplingParams(temperature=TEMPERATURE, max_new_tokens=3, seed=seed)
        result = speculative_generate(target, drafter, PROMPT, 2, sampling, engine=engine)
        counts[tuple(result.output_token_ids)] += 1
    _assert_drawn_as(counts, joint, num_runs)
    assert 0.2 < sum(certain) / len(certain) < 0.8  # both kinds of position, often


def test_a_sampled_token_tree_keeps_the_targets_distribution() -> None:
    """TreeDraft sampling: three candidates at the root, proposed for certain and tried in
    turn by the server (core.speculative.stochastic_verify_tree); the two tokens of the
    output are the target's draws, and a candidate after the first is accepted often."""
    target = TransformersTarget(tiny_llama(seed=3, vocab_size=VOCAB, logit_scale=1.5))
    draft_model = tiny_llama(seed=4, vocab_size=VOCAB, logit_scale=1.5)
    joint = _joint(target, {})
    counts = np.zeros_like(joint)
    engine = VerificationEngine(target)
    tree = TreeDraft(draft_model, branching=(3,), lookup=False)
    candidates = tree.propose(PROMPT, 1, TEMPERATURE, np.random.default_rng(0)).token_ids
    assert len(candidates) == 3
    num_runs, later_sibling = 1500, 0
    for seed in range(30_000, 30_000 + num_runs):
        drafter = TreeDraft(draft_model, branching=(3,), lookup=False)
        sampling = SamplingParams(temperature=TEMPERATURE, max_new_tokens=2, seed=seed)
        result = speculative_generate(target, drafter, PROMPT, 2, sampling, engine=engine)
        y1, y2 = result.output_token_ids
        counts[y1, y2] += 1
        later_sibling += y1 in candidates[1:]  # drawn from the rest, it is none of them
    _assert_drawn_as(counts, joint, num_runs)
    assert later_sibling > num_runs // 10


class _Certain(HybridDraft):
    """A HybridDraft on 1-grams that notes, for every drafted position, whether its q is a
    point mass (a looked-up token)."""

    def __init__(self, model: Any, certain: list[bool]) -> None:
        super().__init__(model, max_ngram=2, min_ngram=1)
        self._certain = certain

    def _next(self, *args: Any) -> tuple[int, np.ndarray | None]:
        token, q = super()._next(*args)
        assert q is not None and q[token] > 0
        self._certain.append(bool(q[token] == 1.0))
        return token, q


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
