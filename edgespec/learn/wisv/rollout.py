"""WISV's rollout capture: the mismatches WISV itself reaches, labelled against the
target-only output of the original prompt (issue 50, item 2).

The lossless capture (:mod:`edgespec.learn.wisv.capture`) sees only each round's first
mismatch on the target's own output. Here the pair decodes with WISV's rule, a decision
head deciding every mismatch (:class:`HeadRule`), so positions after an accepted mismatch
are reached and captured too. Per prompt (:func:`capture_rollout`):

1. **Rollout** (:func:`wisv_rollout`). Rounds of window γ as in both hosts: a round drafts
   min(γ, ``max_new_tokens`` − start − 1) tokens, then the target adds one. Since every
   accepted token is the drafted one, the committed prefix is the draft's prefix, so
   the draft's proposal and the target's greedy token at each output position are the
   two models' greedy tokens on the committed output so far (each model steps once per
   committed token on its own KV cache). At a drafted position where they agree, the
   token is committed. Where they differ (a **mismatch**), the decision rule sees both
   post-norm hidden states: it rejects (the target's token is committed and the round
   ends) or accepts (the draft's token is committed and the round goes on). Every
   mismatch met is captured, accepted or rejected, with its round and offset. Decoding
   stops at EOS, ``max_new_tokens`` or when the outcome is final.
2. **Reference.** The target-only output O of the original prompt: the rollout's prefix
   up to its first accepted mismatch a is the target's own, so O is the target's greedy
   continuation of that prefix with O[a] the target's token there (no acceptance: O is
   the rollout's output).
3. **Base label**, as in the lossless capture's step 4 but on the rollout's prefix: at a
   mismatch at output position j, accept the draft token d_j (output R[:j] + d_j, R the
   rollout), then decode target-only under the same stopping rules. With an answer
   (GSM8K) the mismatch is critical when the final answer differs from O's. With the
   continuation similarity (free text) it is critical when the ROUGE-L F1 of the W-token
   windows from j of O and of the continuation is below the threshold (positions in
   output coordinates; LCS tolerates the shifts an accepted token makes). After an
   accepted critical mismatch O's answer is usually lost already, so the later rows of
   that prompt are mostly critical: ``off_reference`` marks them. Each row therefore
   also gets a **local label** (``local_critical``): accepting d_j against rejecting it
   on the same prefix, i.e. the continuation above against R[:j] + the target's token,
   then target-only (by answer, or by ROUGE-L F1 of the two windows from j). Up to the
   first accepted mismatch the rejecting continuation is O, so there the two labels are
   one; past it each row costs one more continuation (in the same batch).

**The head's channel.** :class:`HeadRule` evaluates the head with one channel's CSI
features per prompt: a draw of :func:`~edgespec.policies.semantic.relabel.sample_channel`
seeded by (seed, prompt index) (``draw``, so a resumed run draws the same), or the
acceptance table's ``poor`` or ``good`` link.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from edgespec.learn.wisv.capture import (
    BaseLabels,
    CaptureSettings,
    Criterion,
    PromptCapture,
    RoundMismatch,
    base_labels,
)
from edgespec.learn.wisv.decoding import FloatArray, Reference, Stopping, continue_greedy
from edgespec.learn.wisv.similarity import ContinuationSimilarity
from edgespec.learn.wisv.steppers import DraftStepper, TargetStepper
from edgespec.policies.interfaces import SemanticHead
from edgespec.policies.semantic.csi import ChannelState
from edgespec.policies.semantic.judge import judge_mismatches
from edgespec.policies.semantic.relabel import sample_channel
from edgespec.runtime.backends.attention_mask import AttentionLayout
from edgespec.runtime.backends.transformers_backend import eos_ids


class Stepper(Protocol):
    """A model decoding one committed token at a time: its greedy next token and the
    hidden state that predicts it."""

    def start(self, prompt_ids: Sequence[int]) -> tuple[int, FloatArray]: ...

    def step(self, token: int) -> tuple[int, FloatArray]: ...


class Decision(Protocol):
    """WISV's rule at a mismatch: whether to reject the draft's token."""

    def rejects(self, draft_hidden: FloatArray, target_hidden: FloatArray) -> bool: ...


@dataclass(frozen=True, slots=True, eq=False)
class HeadRule:
    """Eq. 27 with a decision head on one channel: reject iff p ≥ ``threshold``/16, asked
    one mismatch at a time through :func:`~edgespec.policies.semantic.judge.judge_mismatches`,
    as the real server asks a round's mismatches (an answer that is not one bool is a
    :class:`~edgespec.policies.contracts.PolicyContractError` naming the head)."""

    head: SemanticHead
    channel: ChannelState
    threshold: float

    def rejects(self, draft_hidden: FloatArray, target_hidden: FloatArray) -> bool:
        answer = judge_mismatches(
            self.head, draft_hidden, target_hidden, self.channel, self.threshold
        )
        return bool(answer[0])


def rollout_channel(name: str, seed: int, prompt_index: int) -> ChannelState:
    """The channel the head sees on one prompt (module docstring)."""
    from edgespec.learn.wisv.train import CHANNELS

    if name == "draw":
        return sample_channel(np.random.default_rng([seed, prompt_index]))
    if name not in CHANNELS:
        known = ", ".join(("draw", *CHANNELS))
        raise ValueError(f"unknown rollout channel {name!r}: known are {known}")
    return CHANNELS[name]


@dataclass(frozen=True, slots=True)
class Met:
    """One mismatch the rollout met: where, both tokens, both states, the decision."""

    at: RoundMismatch
    draft_id: int
    target_id: int
    draft_hidden: FloatArray
    target_hidden: FloatArray
    accepted: bool


@dataclass(frozen=True, slots=True, eq=False)
class Rollout:
    """WISV's output, the target's hidden rows (row j predicts token j), every mismatch
    met in output order, the rounds and the per-position draft/target agreement."""

    output: tuple[int, ...]
    target_hidden: FloatArray
    met: tuple[Met, ...]
    num_rounds: int
    agreement: float
    draft_width: int


def wisv_rollout(
    target: Stepper,
    draft: Stepper,
    prompt_ids: Sequence[int],
    gamma: int,
    max_new_tokens: int,
    eos: frozenset[int],
    stopping: Stopping,
    decision: Decision,
) -> Rollout:
    """Step 1 of the module docstring. The target stepper is left holding prompt +
    output[:-1] (the last token is never fed)."""
    if gamma < 1 or max_new_tokens < 1:
        raise ValueError("gamma and max_new_tokens must be >= 1")
    t_tok, t_h = target.start(prompt_ids)
    d_tok, d_h = draft.start(prompt_ids)
    output: list[int] = []
    rows: list[FloatArray] = []
    met: list[Met] = []
    agree: list[bool] = []
    start = rounds = 0
    block = min(gamma, max_new_tokens - 1)
    while True:
        j = len(output)
        rows.append(t_h)
        agree.append(d_tok == t_tok)
        token, ends = t_tok, True  # a plain target step ends its round
        if j - start < block:
            ends = False
            if d_tok != t_tok:
                ends = decision.rejects(d_h, t_h)
                at = RoundMismatch(j, rounds, j - start)
                met.append(Met(at, d_tok, t_tok, d_h, t_h, not ends))
            token = t_tok if ends else d_tok
        output.append(token)
        if ends:
            start, rounds = j + 1, rounds + 1
            block = min(gamma, max_new_tokens - start - 1)
        if token in eos or len(output) >= max_new_tokens or stopping.finished(output):
            break
        t_tok, t_h = target.step(token)
        d_tok, d_h = draft.step(token)
    return Rollout(
        output=tuple(output),
        target_hidden=np.stack(rows).astype(np.float32),
        met=tuple(met),
        num_rounds=rounds + (0 if ends else 1),
        agreement=float(np.mean(agree)),
        draft_width=int(d_h.shape[-1]),
    )


def first_accepted(met: Sequence[Met]) -> Met | None:
    """The first accepted mismatch, or None."""
    return next((m for m in met if m.accepted), None)


def capture_rollout(
    target: Any,
    draft: Any,
    layout: AttentionLayout,
    prompt_ids: Sequence[int],
    prompt_index: int,
    settings: CaptureSettings,
    outcome: Criterion,
    decision: Decision,
    eos: frozenset[int] | None = None,
) -> PromptCapture:
    """Steps 1–3 of the module docstring for one prompt: a :class:`PromptCapture` whose
    ``output`` is the rollout's, ``answer`` the target-only output's, with
    ``accepted`` and ``off_reference`` filled."""
    eos = eos_ids(target) if eos is None else eos
    clock = time.perf_counter()
    stepper = TargetStepper(target, layout)
    roll = wisv_rollout(
        stepper, DraftStepper(draft), prompt_ids, settings.gamma, settings.max_new_tokens, eos,
        outcome, decision,
    )  # fmt: skip
    rolled = Reference(roll.output, roll.target_hidden, stepper.layers())
    seconds = {"rollout": time.perf_counter() - clock}
    clock = time.perf_counter()
    limit, n = settings.max_new_tokens, len(prompt_ids)
    first = first_accepted(roll.met)
    reference = roll.output
    if first is not None:  # the target-only output: the rollout's until its first acceptance
        start = [(first.at.position, first.target_id)]
        reference = continue_greedy(target, layout, rolled, n, start, limit, eos, outcome)[0][0]
    seconds["reference"] = time.perf_counter() - clock
    clock = time.perf_counter()
    labels, local, off, decoded = _label_rows(
        target, layout, rolled, n, roll.met, reference, limit, eos, outcome
    )
    seconds["continuations"] = time.perf_counter() - clock
    return PromptCapture(
        prompt_index=prompt_index,
        prompt_tokens=n,
        output=roll.output,
        answer=labels.answer,
        mismatches=tuple(m.at for m in roll.met),
        draft_ids=tuple(m.draft_id for m in roll.met),
        target_ids=tuple(m.target_id for m in roll.met),
        draft_hidden=_stacked([m.draft_hidden for m in roll.met], roll.draft_width),
        target_hidden=_stacked([m.target_hidden for m in roll.met], roll.target_hidden.shape[1]),
        continuation_answers=labels.continuation_answers,
        critical=labels.critical,
        num_rounds=roll.num_rounds,
        agreement=roll.agreement,
        continuation_tokens=decoded,
        seconds=seconds,
        similarity=labels.similarity,
        accepted=tuple(int(m.accepted) for m in roll.met),
        off_reference=off,
        local_critical=local,
    )


def _stacked(rows: list[FloatArray], width: int) -> FloatArray:
    """``rows`` as one float32 array (``width`` columns when there are none)."""
    return np.stack(rows).astype(np.float32) if rows else np.zeros((0, width), np.float32)


def _label_rows(
    target: Any,
    layout: AttentionLayout,
    rolled: Reference,
    prompt_len: int,
    met: Sequence[Met],
    reference: Sequence[int],
    limit: int,
    eos: frozenset[int],
    outcome: Criterion,
) -> tuple[BaseLabels, tuple[int, ...], tuple[int, ...], int]:
    """Step 3 of the module docstring: (the base labels, the local labels, the
    off-reference flags, the continuation tokens decoded), every continuation in one batch
    on the rollout's cache."""
    first = first_accepted(met)
    at = [m.at.position for m in met]
    off = tuple(int(first is not None and j > first.at.position) for j in at)
    window = outcome.window if isinstance(outcome, ContinuationSimilarity) else None
    starts = [(m.at.position, m.draft_id) for m in met]
    alternatives = [(m.at.position, m.target_id) for m, o in zip(met, off, strict=True) if o]
    outputs, decoded = continue_greedy(
        target, layout, rolled, prompt_len, starts + alternatives, limit, eos, outcome, window
    )
    accepted, rejected = outputs[: len(starts)], iter(outputs[len(starts) :])
    labels = base_labels(outcome, reference, accepted, at)
    local = tuple(
        base_labels(outcome, next(rejected), [o], [j]).critical[0] if is_off else y
        for o, j, is_off, y in zip(accepted, at, off, labels.critical, strict=True)
    )
    return labels, local, off, decoded
