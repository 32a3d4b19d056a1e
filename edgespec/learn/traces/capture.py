"""Capture traces from a real draft/target pair, in process, through the runtime's own loop.

Per prompt: speculative decoding with the runtime's engine and drafter loop
(:func:`edgespec.runtime.wire.inprocess.speculative_generate`, greedy or sampled at
``temperature``, a static window ``gamma_max`` or the dynamic one starting there, optionally
with a stop predictor) gives the output and per-round timings (and draft passes); then the
drafter is asked for one token at every output position on the target's prefix, giving the
per-position ``acceptance_seq`` and (for neural drafts) the draft-logit features. Sampled,
``acceptance_seq`` holds what the rounds drew and ``acceptance_prob`` each position's α
(:func:`~edgespec.learn.traces.acceptance.sampled_flags`); a sampled token tree's rounds are
what its trace replays (its nodes are proposed for certain, and whether a position is
accepted depends on the siblings drawn before it: no α per position). Optionally the same
prompt is also decoded by the target alone and by transformers' assisted generation (at the
same temperature), for the speedup comparison.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from edgespec.core.types import RoundRecord
from edgespec.learn.traces.acceptance import (
    SampledPositions,
    acceptance_probabilities,
    flags_from_rounds,
    per_position_acceptance,
    rejection_continuations,
    sampled_flags,
    target_hidden_rows,
    wants_hidden,
)
from edgespec.learn.traces.baselines import baselines
from edgespec.learn.traces.records import TraceRecord, TraceRound
from edgespec.learn.traces.settings import (
    CaptureSettings,
    PairInfo,
    capture_window,
    prompt_sampling,
    prompt_seed,
)
from edgespec.runtime.backends.base import DraftBackend, TargetBackend
from edgespec.runtime.backends.tree_draft import TreeDraft
from edgespec.runtime.wire.inprocess import speculative_generate


def capture_one(
    target: TargetBackend,
    drafter: DraftBackend,
    pair: PairInfo,
    prompt_ids: Sequence[int],
    request_id: str,
    dataset: str,
    index: int,
    arrival_ms: float,
    settings: CaptureSettings,
    on_stage: Callable[[str], None] = lambda stage: None,
) -> TraceRecord:
    """Run one prompt and build its :class:`TraceRecord`; ``on_stage`` hears each stage
    as it begins (a long prompt with baselines takes minutes on a CPU)."""
    on_stage("speculative decoding")
    start = time.perf_counter()
    result = speculative_generate(target, drafter, prompt_ids, capture_window(settings),
                                  prompt_sampling(settings, index), stop=settings.stop)  # fmt: skip
    sd_ms = (time.perf_counter() - start) * 1e3
    output = result.output_token_ids
    on_stage("acceptance per position")
    hidden = target_hidden_rows(target, (*prompt_ids, *output)) if wants_hidden(drafter) else None
    drawn, sampled = None, None
    if settings.temperature > 0 and not isinstance(drafter, TreeDraft):
        drawn, sampled = _sampled_acceptance(target, drafter, prompt_ids, result, settings,
                                             index, hidden)  # fmt: skip
    seq, feats, after = _acceptance(drafter, prompt_ids, result, settings.gamma_max, hidden, drawn)
    target_only_ms, assisted_ms, lossless = baselines(
        target, pair, prompt_ids, output, settings, on_stage
    )
    return TraceRecord(
        request_id=request_id,
        arrival_ms=arrival_ms,
        prompt_tokens=len(prompt_ids),
        output_tokens=len(output),
        drafter_id=index % settings.num_drafters,
        slo_class=settings.slo_classes[index % len(settings.slo_classes)],
        dataset=dataset,
        draft_model=pair.draft_name,
        target_model=pair.target_name,
        gamma_max=settings.gamma_max,
        acceptance_seq=seq,
        rounds=tuple(_round(r) for r in result.rounds),
        draft_features=feats,
        sd_ms=sd_ms,
        target_only_ms=target_only_ms,
        assisted_ms=assisted_ms,
        lossless=lossless,
        draft_tree=settings.draft_tree,
        rejection_features=after,
        temperature=settings.temperature,
        acceptance_prob=None if sampled is None else sampled.alphas,
        draft_row_entries=None if sampled is None else sampled.row_entries,
        top_k=settings.top_k,
        top_p=settings.top_p,
        min_p=settings.min_p,
    )


def _round(played: RoundRecord) -> TraceRound:
    """A round the drafter loop played, as the trace records it (milliseconds)."""
    return TraceRound(played.num_drafted, played.num_accepted, played.draft_s * 1e3,
                      played.verify_s * 1e3, played.num_draft_passes)  # fmt: skip


def _acceptance(
    drafter: DraftBackend,
    prompt_ids: Sequence[int],
    result: Any,
    gamma_max: int,
    hidden: Any,
    drawn: tuple[int, ...] | None,
) -> tuple[tuple[int, ...], Any, Any]:
    """(acceptance per output position, the draft's features there, the rejection
    continuations) of one speculative ``result``: a sampled capture's ``drawn`` flags, else
    the draft's greedy tokens on the target's prefix; drafters that need the target's
    ``hidden`` rows and token trees take the flags from the rounds played (see trace.py:
    their steps). The continuations follow the flags' rejections."""
    output = result.output_token_ids
    seq, feats = per_position_acceptance(drafter, prompt_ids, output, hidden)
    if hidden is not None or isinstance(drafter, TreeDraft):
        played = flags_from_rounds([r.num_accepted for r in result.rounds], len(output))
        return (played if drawn is None else drawn), feats, None
    seq = seq if drawn is None else drawn
    after = None
    if feats is not None:
        after = rejection_continuations(drafter, prompt_ids, output, seq, gamma_max)
    return seq, feats, after


def _sampled_acceptance(
    target: TargetBackend,
    drafter: DraftBackend,
    prompt_ids: Sequence[int],
    result: Any,
    settings: CaptureSettings,
    index: int,
    hidden: Any,
) -> tuple[tuple[int, ...], SampledPositions]:
    """A sampled capture's flags (:func:`sampled_flags` of its rounds, positions no round
    tested drawn with a stream of the prompt's own seed) and its α and draft rows' entries
    per position."""
    output = result.output_token_ids
    sampling = prompt_sampling(settings, index)
    sampled = acceptance_probabilities(drafter, target, prompt_ids, output, sampling, hidden)
    rounds = [(r.num_drafted, r.num_accepted) for r in result.rounds]
    rng = np.random.default_rng((prompt_seed(settings, index), 1))
    return sampled_flags(rounds, sampled.alphas, rng), sampled


def _quiet(stage: str) -> None:
    """No one listens to the stages."""


def capture(
    target: TargetBackend,
    drafter: DraftBackend,
    pair: PairInfo,
    prompts: Sequence[tuple[str, str, Sequence[int]]],
    settings: CaptureSettings,
    on_record: Callable[[TraceRecord], None] | None = None,
    on_stage: Callable[[str, str], None] | None = None,
) -> list[TraceRecord]:
    """Capture ``(request_id, dataset, prompt_ids)`` prompts in order; Poisson arrivals
    at ``arrival_rate_per_s`` (seeded) are written as ``arrival_ms``. ``on_stage`` hears
    ``(request_id, stage)`` as each stage of a prompt begins."""
    if not prompts:
        return []
    rng = np.random.default_rng(settings.seed)
    gaps = rng.exponential(1000.0 / settings.arrival_rate_per_s, size=len(prompts))
    arrivals = np.cumsum(gaps) - gaps[0]
    records = []
    for index, (request_id, dataset, prompt_ids) in enumerate(prompts):
        record = capture_one(
            target,
            drafter,
            pair,
            prompt_ids,
            request_id,
            dataset,
            index,
            float(arrivals[index]),
            settings,
            functools.partial(on_stage, request_id) if on_stage else _quiet,
        )
        records.append(record)
        if on_record is not None:
            on_record(record)
    return records
