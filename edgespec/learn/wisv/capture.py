"""WISV's Stage-1 dataset (seed 003): greedy mismatches of a real draft/target pair with
both models' hidden states and a "critical" base label, from GSM8K, CNN/DailyMail or
ShareGPT train prompts.

Per prompt (:func:`capture_prompt`):

1. **Reference.** The target decodes greedily on its own KV cache until the outcome is
   final (:class:`Outcome`: for GSM8K, :mod:`edgespec.learn.wisv.answers`), EOS or
   ``max_new_tokens``. This is the output O (n tokens) and its answer. Each step keeps
   the target's last-layer hidden state, after the final norm, at the input position
   whose logits predict the next token. So row j of ``H_t`` belongs to output token j.
2. **Draft.** One forward of the draft over prompt + O[:n−1] gives its argmax and
   post-norm hidden state at every position predicting O[j] on the target's prefix.
3. **Mismatches.** Greedy speculative decoding at window γ is lossless: its committed
   tokens are O. Each round starts on the target's prefix and drafts γ tokens (at most
   n − start − 1: the last output token is a plain target step, as in both hosts). Its
   first disagreement is a mismatch (:func:`greedy_rounds`), and that round's draft
   prefix is O's. So each mismatch's states are exactly those of steps 1–2, with no
   separate speculative loop. Disagreements after a round's first mismatch sit on the
   draft's own (rejected) token. Lossless SD never reaches them, and they are not
   captured here. (Under WISV, an accepted mismatch leads to such positions: the rollout
   capture, :mod:`edgespec.learn.wisv.rollout`, reaches and labels them.)
4. **Base label.** For the mismatch at output position j, the draft's token d_j is
   accepted: output O[:j] + d_j, then target-only greedy decoding under the same stopping
   rules, up to ``max_new_tokens`` in all. With an :class:`Outcome` (GSM8K) the mismatch
   is critical (y = 1) when the final answer differs from the reference's. With a
   :class:`~edgespec.learn.wisv.similarity.ContinuationSimilarity` (free text: CNN/DM,
   ShareGPT) the reference runs to EOS or ``max_new_tokens``, each continuation stops W
   tokens after j, and the mismatch is critical when the ROUGE-L F1 of the two W-token
   windows from j is below the threshold (that module's docstring states W, the threshold
   and why). All of a prompt's continuations run as one left-padded batch that reuses the
   reference's KV cache (the prefix O[:j] is shared). A finished row leaves the batch.
   The decoding itself is :mod:`edgespec.learn.wisv.decoding`; the rows are saved by
   :class:`edgespec.learn.wisv.dataset.WisvDataset`.

"Critical" is relative to the target's own output: the shared prompt files hold no
reference solutions or summaries, and the question is whether accepting changes what the
target alone would produce.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from edgespec.learn.wisv.answers import answer_finished, extract_answer
from edgespec.learn.wisv.decoding import (
    FloatArray,
    Stopping,
    continue_greedy,
    draft_states,
    target_reference,
)
from edgespec.learn.wisv.similarity import ContinuationSimilarity
from edgespec.runtime.backends.attention_mask import AttentionLayout
from edgespec.runtime.backends.transformers_backend import eos_ids


class Outcome(Stopping, Protocol):
    """The task outcome of an output (its token ids): when it is final, and what it is."""

    def answer(self, output_ids: Sequence[int]) -> str | None: ...


Criterion = Outcome | ContinuationSimilarity
"""A base label: an answer to compare (GSM8K) or the continuation similarity (free text)."""


@dataclass(frozen=True, slots=True)
class TextOutcome:
    """GSM8K's outcome on decoded text (:mod:`edgespec.learn.wisv.answers`)."""

    tokenizer: Any

    def _text(self, output_ids: Sequence[int]) -> str:
        return str(self.tokenizer.decode(list(output_ids), skip_special_tokens=True))

    def finished(self, output_ids: Sequence[int]) -> bool:
        return answer_finished(self._text(output_ids))

    def answer(self, output_ids: Sequence[int]) -> str | None:
        return extract_answer(self._text(output_ids))


@dataclass(frozen=True, slots=True)
class CaptureSettings:
    gamma: int = 8
    max_new_tokens: int = 128

    def __post_init__(self) -> None:
        if self.gamma < 1 or self.max_new_tokens < 1:
            raise ValueError("gamma and max_new_tokens must be >= 1")


@dataclass(frozen=True, slots=True)
class RoundMismatch:
    """A round's first disagreement: output position, round index, offset in the block."""

    position: int
    round: int
    offset: int


def greedy_rounds(flags: Sequence[bool], gamma: int) -> tuple[list[RoundMismatch], int]:
    """(the rounds' first mismatches, the number of rounds) of greedy SD at window
    ``gamma`` over an output whose per-position draft agreement is ``flags`` (module
    docstring, step 3; the same replay as :func:`edgespec.learn.stop.data.window_rows`)."""
    if gamma < 1:
        raise ValueError(f"gamma must be >= 1, got {gamma}")
    n = len(flags)
    found: list[RoundMismatch] = []
    start = rounds = 0
    while start < n:
        block = min(gamma, n - start - 1)
        accepted = 0
        while accepted < block and flags[start + accepted]:
            accepted += 1
        if accepted < block:
            found.append(RoundMismatch(start + accepted, rounds, accepted))
        start += accepted + 1
        rounds += 1
    return found, rounds


@dataclass(frozen=True, slots=True, eq=False)
class PromptCapture:
    """One prompt's mismatches (arrays in output order) and its bookkeeping."""

    prompt_index: int
    prompt_tokens: int
    output: tuple[int, ...]
    answer: str | None
    mismatches: tuple[RoundMismatch, ...]
    draft_ids: tuple[int, ...]
    target_ids: tuple[int, ...]
    draft_hidden: FloatArray
    target_hidden: FloatArray
    continuation_answers: tuple[str | None, ...]
    critical: tuple[int, ...]
    num_rounds: int
    agreement: float
    continuation_tokens: int
    seconds: dict[str, float] = field(default_factory=dict)
    similarity: tuple[float, ...] | None = None
    """Each mismatch's ROUGE-L F1 under a continuation-similarity criterion, else None."""
    accepted: tuple[int, ...] | None = None
    """A rollout capture's (:mod:`edgespec.learn.wisv.rollout`): 1 where its head accepted
    the mismatch, 0 where it rejected it; None for the lossless capture."""
    off_reference: tuple[int, ...] | None = None
    """A rollout capture's: 1 where the mismatch's prefix differs from the target-only
    output's (it follows an accepted mismatch); None for the lossless capture."""
    local_critical: tuple[int, ...] | None = None
    """A rollout capture's local labels (accepting against rejecting on the same prefix,
    :mod:`edgespec.learn.wisv.rollout`); None for the lossless capture."""


@dataclass(frozen=True, slots=True)
class BaseLabels:
    """The reference's answer, each continuation's answer, each mismatch's label and,
    under a continuation-similarity criterion, each one's ROUGE-L F1 (answers ``None``)."""

    answer: str | None
    continuation_answers: tuple[str | None, ...]
    critical: tuple[int, ...]
    similarity: tuple[float, ...] | None


def base_labels(
    outcome: Criterion,
    reference: Sequence[int],
    outputs: Sequence[Sequence[int]],
    positions: Sequence[int],
) -> BaseLabels:
    """Step 4's labels of the continuations ``outputs`` of the mismatches at ``positions``
    against the target-only output ``reference``."""
    if isinstance(outcome, ContinuationSimilarity):
        scores = tuple(
            outcome.similarity(reference, o, j) for o, j in zip(outputs, positions, strict=True)
        )
        critical = tuple(int(outcome.critical(s)) for s in scores)
        return BaseLabels(None, (None,) * len(outputs), critical, scores)
    answer = outcome.answer(reference)
    answers = tuple(outcome.answer(o) for o in outputs)
    return BaseLabels(answer, answers, tuple(int(a != answer) for a in answers), None)


def capture_prompt(
    target: Any,
    draft: Any,
    layout: AttentionLayout,
    prompt_ids: Sequence[int],
    prompt_index: int,
    settings: CaptureSettings,
    outcome: Criterion,
    eos: frozenset[int] | None = None,
) -> PromptCapture:
    """Steps 1–4 of the module docstring for one prompt (``layout``: the target's
    :func:`~edgespec.runtime.backends.attention_mask.attention_layout`). A
    :class:`~edgespec.learn.wisv.similarity.ContinuationSimilarity` gives no answers
    (``None``) and fills :attr:`PromptCapture.similarity`."""
    eos = eos_ids(target) if eos is None else eos
    clock = time.perf_counter()
    ref = target_reference(target, layout, prompt_ids, settings.max_new_tokens, eos, outcome)
    seconds = {"reference": time.perf_counter() - clock}
    clock = time.perf_counter()
    n = len(ref.output)
    greedy, draft_rows = draft_states(draft, [*prompt_ids, *ref.output[:-1]])
    start = len(prompt_ids) - 1
    greedy, draft_rows = greedy[start : start + n], draft_rows[start : start + n]
    flags = [g == t for g, t in zip(greedy, ref.output, strict=True)]
    found, rounds = greedy_rounds(flags, settings.gamma)
    seconds["draft"] = time.perf_counter() - clock
    clock = time.perf_counter()
    starts = [(m.position, greedy[m.position]) for m in found]
    at = [m.position for m in found]
    window = outcome.window if isinstance(outcome, ContinuationSimilarity) else None
    outputs, decoded = continue_greedy(
        target, layout, ref, len(prompt_ids), starts, settings.max_new_tokens, eos, outcome, window
    )
    labels = base_labels(outcome, ref.output, outputs, at)
    seconds["continuations"] = time.perf_counter() - clock
    return PromptCapture(
        prompt_index=prompt_index,
        prompt_tokens=len(prompt_ids),
        output=ref.output,
        answer=labels.answer,
        mismatches=tuple(found),
        draft_ids=tuple(greedy[p] for p in at),
        target_ids=tuple(ref.output[p] for p in at),
        draft_hidden=draft_rows[at].reshape(len(at), draft_rows.shape[1]),
        target_hidden=ref.hidden[at].reshape(len(at), ref.hidden.shape[1]),
        continuation_answers=labels.continuation_answers,
        critical=labels.critical,
        num_rounds=rounds,
        agreement=float(np.mean(flags)),
        continuation_tokens=decoded,
        seconds=seconds,
        similarity=labels.similarity,
    )
