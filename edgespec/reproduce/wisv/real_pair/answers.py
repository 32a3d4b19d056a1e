"""One answer of the real pair: the loaded :class:`Pair`, a prompt's target-only output
(:func:`target_only`), one speculative generation that stops by the capture's rules
(:func:`answer_run`, :class:`StopAtAnswer`, :func:`stop_prefix`) and a cell's metrics
(:func:`summarise`: agreement, token-identical share, AAL, rounds, tokens/s). The
runs module (:mod:`.runs`) states the prompts, the stop rules and the metrics in full.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from edgespec.core.types import SamplingParams
from edgespec.learn.wisv.capture import Outcome
from edgespec.learn.wisv.decoding import target_reference
from edgespec.policies.semantic.head import DecisionHead
from edgespec.policies.window import StaticWindow
from edgespec.runtime.backends.attention_mask import AttentionLayout
from edgespec.runtime.backends.base import DraftBackend, TargetBackend
from edgespec.runtime.edge.drafter import DraftOptions, generate
from edgespec.runtime.edge.rounds import Verifier
from edgespec.runtime.edge.semantic import SemanticRequest
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyReply

Tick = Callable[[str], None]
"""Called after each generation with a short label (the progress bar)."""


@dataclass(frozen=True, slots=True, eq=False)
class Pair:
    """The loaded pair: the target (a causal LM, and its runtime backend over the same
    weights), a drafter that returns hidden states, the decision head, the task outcome
    (when an output is final, its answer), the target's EOS ids and attention layout."""

    target: Any
    backend: TargetBackend
    drafter: DraftBackend
    head: DecisionHead
    outcome: Outcome
    eos: frozenset[int]
    layout: AttentionLayout
    target_hidden_size: int


@dataclass(frozen=True, slots=True)
class PromptCase:
    """A prompt and its target-only output (``seconds``: the reference decoding's wall
    time)."""

    index: int
    ids: tuple[int, ...]
    reference: tuple[int, ...]
    answer: str | None
    seconds: float


@dataclass(frozen=True, slots=True)
class AnswerRun:
    """One speculative generation of one prompt."""

    prompt: int
    answer: str | None
    agrees: bool
    identical: bool
    """The output cut at its stop point equals the target-only output token by token."""
    stopped: bool
    """It stopped by a stop rule (final answer or EOS), not at ``max_new_tokens``."""
    num_tokens: int
    num_rounds: int
    seconds: float
    accepted_mismatches: int
    exchanges: int
    upload: str | None


def stop_prefix(
    output: Sequence[int], outcome: Outcome, eos: frozenset[int], max_new: int
) -> tuple[int, ...]:
    """The shortest prefix of ``output`` at which decoding stops (EOS, a final answer or
    ``max_new`` tokens); all of it when none does."""
    for k in range(1, len(output) + 1):
        prefix = tuple(output[:k])
        if prefix[-1] in eos or k >= max_new or outcome.finished(prefix):
            return prefix
    return tuple(output)


class StopAtAnswer:
    """A :class:`~edgespec.runtime.edge.rounds.Verifier` in front of ``inner`` that ends
    a session (``finished``) after the round whose committed tokens make the answer final
    by ``outcome``; EOS and the token budget stay the server's."""

    __slots__ = ("_outcome", "_outputs", "inner")

    def __init__(self, inner: Verifier, outcome: Outcome) -> None:
        self.inner = inner
        self._outcome = outcome
        self._outputs: dict[str, list[int]] = {}

    def open(self, spec: SessionSpec) -> None:
        self.inner.open(spec)
        self._outputs[spec.session_id] = []

    def verify(self, call: VerifyCall) -> VerifyReply:
        reply = self.inner.verify(call)
        output = self._outputs.setdefault(call.session_id, [])
        committed = reply.outcome.committed_token_ids
        output.extend(committed)
        if committed and not reply.outcome.finished and self._outcome.finished(output):
            return replace(reply, outcome=replace(reply.outcome, finished=True))
        return reply

    def close(self, session_id: str) -> None:
        self._outputs.pop(session_id, None)
        self.inner.close(session_id)


def target_only(
    pair: Pair, prompts: Sequence[tuple[int, Sequence[int]]], max_new: int, tick: Tick
) -> list[PromptCase]:
    """Each (index, ids) prompt's target-only output and answer, once."""
    cases = []
    for index, ids in prompts:
        start = time.perf_counter()
        ref = target_reference(pair.target, pair.layout, ids, max_new, pair.eos, pair.outcome)
        seconds = time.perf_counter() - start
        answer = pair.outcome.answer(ref.output)
        cases.append(PromptCase(index, tuple(ids), ref.output, answer, seconds))
        tick(f"target-only {index}")
    return cases


def answer_run(
    verifier: Verifier,
    pair: Pair,
    case: PromptCase,
    window: int,
    semantic: SemanticRequest | None,
    max_new: int,
    session_id: str,
) -> AnswerRun:
    """``case``'s prompt through ``verifier`` at static window ``window``, greedy SD when
    ``semantic`` is ``None``, stopping by the capture's rules."""
    pair.drafter.reset()
    result = generate(
        StopAtAnswer(verifier, pair.outcome),
        pair.drafter,
        case.ids,
        SamplingParams(max_new_tokens=max_new),
        DraftOptions(session_id),
        StaticWindow(window),
        semantic=semantic,
    )
    output = result.output_token_ids
    cut = stop_prefix(output, pair.outcome, pair.eos, max_new)
    answer = pair.outcome.answer(output)
    stopped = bool(cut) and (cut[-1] in pair.eos or pair.outcome.finished(cut))
    report = result.semantic
    record = result.request
    return AnswerRun(
        prompt=case.index,
        answer=answer,
        agrees=answer == case.answer,
        identical=cut == case.reference,
        stopped=stopped,
        num_tokens=len(output),
        num_rounds=len(result.rounds),
        seconds=record.finish_s - record.arrival_s,
        accepted_mismatches=0 if report is None else sum(report.accepted_mismatches),
        exchanges=len(result.rounds) if report is None else sum(report.exchanges),
        upload=None if report is None else report.upload,
    )


def summarise(runs: Sequence[AnswerRun]) -> dict[str, Any]:
    """A cell's metrics over its answers (module docstring)."""
    n = len(runs)
    tokens = sum(r.num_tokens for r in runs)
    rounds = sum(r.num_rounds for r in runs)
    seconds = sum(r.seconds for r in runs)
    uploads = sorted({r.upload for r in runs if r.upload is not None})
    return {
        "prompts": n,
        "agreement": sum(r.agrees for r in runs) / n if n else None,
        "identical": sum(r.identical for r in runs) / n if n else None,
        "aal": tokens / rounds if rounds else None,
        "rounds": rounds / n if n else None,
        "tokens_per_answer": tokens / n if n else None,
        "tokens_per_s": tokens / seconds if seconds > 0 else None,
        "latency_s": seconds / n if n else None,
        "latency_per_token_ms": 1e3 * seconds / tokens if tokens else None,
        "accepted_mismatches": sum(r.accepted_mismatches for r in runs) / n if n else None,
        "exchanges_per_round": sum(r.exchanges for r in runs) / rounds if rounds else None,
        "stopped": sum(r.stopped for r in runs) / n if n else None,
        "upload": uploads,
    }


def run_dict(run: AnswerRun) -> dict[str, Any]:
    return {
        "prompt": run.prompt,
        "answer": run.answer,
        "agrees": run.agrees,
        "identical": run.identical,
        "stopped": run.stopped,
        "tokens": run.num_tokens,
        "rounds": run.num_rounds,
        "seconds": round(run.seconds, 4),
        "accepted_mismatches": run.accepted_mismatches,
        "exchanges": run.exchanges,
        "upload": run.upload,
    }


def target_only_dict(cases: Sequence[PromptCase]) -> dict[str, Any]:
    tokens = sum(len(c.reference) for c in cases)
    seconds = sum(c.seconds for c in cases)
    return {
        "prompts": len(cases),
        "tokens_per_answer": tokens / len(cases) if cases else None,
        "tokens_per_s": tokens / seconds if seconds > 0 else None,
        "latency_s": seconds / len(cases) if cases else None,
        "answers_found": sum(c.answer is not None for c in cases),
        "answers": {str(c.index): c.answer for c in cases},
    }
