"""Capture traces from a real draft/target pair, in process, through the runtime's own loop.

Per prompt: speculative decoding with the runtime's engine and drafter loop
(:func:`edgespec.runtime.wire.inprocess.speculative_generate`, greedy, a static window
``gamma_max`` or the dynamic one starting there, optionally with a stop predictor) gives the
output and per-round timings (and draft passes); then the drafter is asked for one token at every
output position on the target's prefix, giving the per-position ``acceptance_seq`` and (for
neural drafts) the draft-logit features. Optionally the same prompt is also decoded by the
target alone and by transformers' assisted generation, for the speedup comparison.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgespec.core.types import SamplingParams
from edgespec.learn.traces.acceptance import (
    flags_from_rounds,
    per_position_acceptance,
    rejection_continuations,
    target_hidden_rows,
    wants_hidden,
)
from edgespec.learn.traces.records import TraceRecord, TraceRound
from edgespec.policies.interfaces import WindowPolicy
from edgespec.policies.stop_drafting import DraftStopPolicy
from edgespec.policies.window import DynamicWindow, StaticWindow
from edgespec.runtime.backends.base import (
    DraftBackend,
    TargetBackend,
)
from edgespec.runtime.backends.tree_draft import TreeDraft
from edgespec.runtime.wire.inprocess import speculative_generate, target_greedy_decode


@dataclass(frozen=True, slots=True)
class CaptureSettings:
    """What to run per prompt."""

    gamma_max: int = 4
    max_new_tokens: int = 64
    target_only: bool = False
    assisted: bool = False
    slo_classes: tuple[str, ...] = ("default",)
    num_drafters: int = 8
    arrival_rate_per_s: float = 1.0
    seed: int = 0
    draft_tree: str | None = None
    """The token-tree branching drafted (``edgespec trace --tree``), None for chains."""
    window: str = "static"
    """``static`` (γ = ``gamma_max`` every round) or ``dynamic``
    (:class:`~edgespec.policies.window.DynamicWindow` from ``gamma_max``)."""
    stop: DraftStopPolicy | None = None
    """A stop predictor ending each block at its first predicted rejection (K_max = γ)."""

    def __post_init__(self) -> None:
        if self.window not in WINDOWS:
            raise ValueError(f"window must be one of {', '.join(WINDOWS)}, got {self.window!r}")
        if not self.slo_classes or not all(self.slo_classes):
            raise ValueError(f"slo_classes must be non-empty names, got {self.slo_classes!r}")
        if self.num_drafters < 1:
            raise ValueError(f"num_drafters must be >= 1, got {self.num_drafters}")


WINDOWS = ("static", "dynamic")
DYNAMIC_MAX_GAMMA = 8
"""The dynamic window's largest γ (DynamicWindow's default), or ``gamma_max`` if larger."""


def capture_window(settings: CaptureSettings) -> WindowPolicy:
    """The window policy ``settings`` ask for."""
    if settings.window == "dynamic":
        top = max(settings.gamma_max, DYNAMIC_MAX_GAMMA)
        return DynamicWindow(initial_gamma=settings.gamma_max, max_gamma=top)
    return StaticWindow(settings.gamma_max)


@dataclass(frozen=True, slots=True)
class PairInfo:
    """Names written into the trace, and the HF models for the assisted baseline."""

    target_name: str
    draft_name: str
    target_model: Any = None
    draft_model: Any = None


def assisted_generate(
    pair: PairInfo, prompt_ids: Sequence[int], settings: CaptureSettings
) -> tuple[int, ...]:
    """transformers' own assisted generation with the same pair, fixed window ``gamma_max``."""
    import torch

    draft = pair.draft_model
    draft.generation_config.num_assistant_tokens = settings.gamma_max
    draft.generation_config.num_assistant_tokens_schedule = "constant"
    draft.generation_config.assistant_confidence_threshold = 0.0
    device = next(pair.target_model.parameters()).device
    ids = torch.tensor([list(prompt_ids)], dtype=torch.long, device=device)
    with torch.inference_mode():
        out = pair.target_model.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            assistant_model=draft,
            max_new_tokens=settings.max_new_tokens,
            do_sample=False,
        )
    return tuple(int(t) for t in out[0, ids.shape[1] :])


def _baselines(
    target: TargetBackend,
    pair: PairInfo,
    prompt_ids: Sequence[int],
    output: Sequence[int],
    settings: CaptureSettings,
    on_stage: Callable[[str], None],
) -> tuple[float | None, float | None, bool | None]:
    """The baselines ``settings`` ask for, timed (ms): the target alone, assisted
    generation; and whether ``output`` equals each of them (``None``: none ran)."""
    target_only_ms = assisted_ms = None
    lossless: bool | None = None
    if settings.target_only:
        on_stage("the target alone (baseline)")
        start = time.perf_counter()
        reference = target_greedy_decode(target, prompt_ids, settings.max_new_tokens)
        target_only_ms = (time.perf_counter() - start) * 1e3
        lossless = reference == tuple(output)
    if settings.assisted and pair.draft_model is not None:
        on_stage("assisted generation (baseline)")
        start = time.perf_counter()
        assisted = assisted_generate(pair, prompt_ids, settings)
        assisted_ms = (time.perf_counter() - start) * 1e3
        same = assisted[: len(output)] == tuple(output)
        lossless = same if lossless is None else (lossless and same)
    return target_only_ms, assisted_ms, lossless


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
    sampling = SamplingParams(max_new_tokens=settings.max_new_tokens)
    on_stage("speculative decoding")
    start = time.perf_counter()
    window = capture_window(settings)
    result = speculative_generate(target, drafter, prompt_ids, window, sampling, stop=settings.stop)
    sd_ms = (time.perf_counter() - start) * 1e3
    output = result.output_token_ids
    on_stage("acceptance per position")
    seq, feats, after = _acceptance(target, drafter, prompt_ids, result, settings.gamma_max)
    target_only_ms, assisted_ms, lossless = _baselines(
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
        rounds=tuple(
            TraceRound(
                r.num_drafted,
                r.num_accepted,
                r.draft_s * 1e3,
                r.verify_s * 1e3,
                r.num_draft_passes,
            )
            for r in result.rounds
        ),
        draft_features=feats,
        sd_ms=sd_ms,
        target_only_ms=target_only_ms,
        assisted_ms=assisted_ms,
        lossless=lossless,
        draft_tree=settings.draft_tree,
        rejection_features=after,
    )


def _acceptance(
    target: TargetBackend,
    drafter: DraftBackend,
    prompt_ids: Sequence[int],
    result: Any,
    gamma_max: int,
) -> tuple[tuple[int, ...], Any, Any]:
    """(acceptance per output position, the draft's features there, the rejection
    continuations) of one speculative ``result``; drafters that need the target's hidden
    rows and token trees take the flags from the rounds played (see trace.py: their steps)."""
    output = result.output_token_ids
    hidden = None
    if wants_hidden(drafter):
        hidden = target_hidden_rows(target, (*prompt_ids, *output))
    seq, feats = per_position_acceptance(drafter, prompt_ids, output, hidden)
    after = None
    if hidden is not None or isinstance(drafter, TreeDraft):
        seq = flags_from_rounds([r.num_accepted for r in result.rounds], len(output))
    elif feats is not None:
        after = rejection_continuations(drafter, prompt_ids, output, seq, gamma_max)
    return seq, feats, after


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
