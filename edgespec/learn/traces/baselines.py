"""The baselines a trace times beside speculative decoding (``edgespec trace --baselines``):
the target alone and transformers' assisted generation with the same pair, greedy or
sampled at the capture's temperature."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from edgespec.learn.traces.settings import CaptureSettings, PairInfo, prompt_sampling
from edgespec.runtime.backends.base import TargetBackend
from edgespec.runtime.wire.inprocess import target_greedy_decode, target_sampled_decode


def assisted_generate(
    pair: PairInfo, prompt_ids: Sequence[int], settings: CaptureSettings
) -> tuple[int, ...]:
    """transformers' own assisted generation with the same pair, fixed window ``gamma_max``,
    greedy or sampling at ``settings.temperature`` with its cuts."""
    import torch

    draft = pair.draft_model
    draft.generation_config.num_assistant_tokens = settings.gamma_max
    draft.generation_config.num_assistant_tokens_schedule = "constant"
    draft.generation_config.assistant_confidence_threshold = 0.0
    device = next(pair.target_model.parameters()).device
    ids = torch.tensor([list(prompt_ids)], dtype=torch.long, device=device)
    sampled = settings.temperature > 0
    how: dict[str, Any] = {"do_sample": sampled}
    if sampled:  # the capture's cuts (transformers' top_k defaults to 50: 0 turns it off)
        how.update(temperature=settings.temperature, top_k=settings.top_k,
                   top_p=settings.top_p, min_p=settings.min_p or None)  # fmt: skip
    with torch.inference_mode():
        out = pair.target_model.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            assistant_model=draft,
            max_new_tokens=settings.max_new_tokens,
            **how,
        )
    return tuple(int(t) for t in out[0, ids.shape[1] :])


def _target_alone(
    target: TargetBackend, prompt_ids: Sequence[int], settings: CaptureSettings, index: int
) -> tuple[int, ...]:
    if settings.temperature > 0:
        return target_sampled_decode(target, prompt_ids, prompt_sampling(settings, index))
    return target_greedy_decode(target, prompt_ids, settings.max_new_tokens)


def baselines(
    target: TargetBackend,
    pair: PairInfo,
    prompt_ids: Sequence[int],
    output: Sequence[int],
    settings: CaptureSettings,
    index: int,
    on_stage: Callable[[str], None],
) -> tuple[float | None, float | None, bool | None]:
    """The baselines ``settings`` ask for, timed (ms): the target alone, assisted
    generation; and whether ``output`` equals each of them (``None``: none ran, or they
    sampled: their tokens are other draws, their times alone count)."""
    target_only_ms = assisted_ms = None
    same: list[bool] = []
    if settings.target_only:
        on_stage("the target alone (baseline)")
        start = time.perf_counter()
        reference = _target_alone(target, prompt_ids, settings, index)
        target_only_ms = (time.perf_counter() - start) * 1e3
        same.append(reference == tuple(output))
    if settings.assisted and pair.draft_model is not None:
        on_stage("assisted generation (baseline)")
        start = time.perf_counter()
        assisted = assisted_generate(pair, prompt_ids, settings)
        assisted_ms = (time.perf_counter() - start) * 1e3
        same.append(assisted[: len(output)] == tuple(output))
    lossless = all(same) if same and settings.temperature == 0 else None
    return target_only_ms, assisted_ms, lossless
