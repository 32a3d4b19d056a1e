"""The baselines a trace times beside speculative decoding (``edgespec trace --baselines``):
plain decoding by the target alone and transformers' assisted generation with the same
pair, both ``generate`` on the library's own kernels (what a user of the library runs
without edgespec; the trace's target decodes on the exact, batch-invariant kernels, which
pad every pass to 8 rows and would slow a one-token pass most), each decoding as many
tokens as speculative decoding gave, greedy or sampled at the capture's temperature.
Whether speculative decoding was lossless is checked against the target alone on the
exact kernels, greedy: untimed, as the server decodes."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from edgespec.learn.traces.settings import CaptureSettings, PairInfo
from edgespec.runtime.backends.base import TargetBackend
from edgespec.runtime.wire.inprocess import target_greedy_decode


def library_generate(
    pair: PairInfo,
    prompt_ids: Sequence[int],
    settings: CaptureSettings,
    num_tokens: int,
    assisted: bool,
) -> tuple[int, ...]:
    """transformers' ``generate`` of exactly ``num_tokens`` tokens on the library's kernels:
    the target alone, or ``assisted`` by the pair's draft (fixed window ``gamma_max``);
    greedy or sampling at ``settings.temperature`` with its cuts."""
    import torch

    from edgespec.runtime.backends.batch_invariant import library_kernels

    how: dict[str, Any] = {"do_sample": settings.temperature > 0}
    if settings.temperature > 0:  # the capture's cuts (transformers' top_k defaults to 50)
        how.update(temperature=settings.temperature, top_k=settings.top_k,
                   top_p=settings.top_p, min_p=settings.min_p or None)  # fmt: skip
    if assisted:
        draft = pair.draft_model
        draft.generation_config.num_assistant_tokens = settings.gamma_max
        draft.generation_config.num_assistant_tokens_schedule = "constant"
        draft.generation_config.assistant_confidence_threshold = 0.0
        how["assistant_model"] = draft
    model = pair.target_model
    ids = torch.tensor([list(prompt_ids)], dtype=torch.long, device=model.device)
    with torch.inference_mode(), library_kernels(model):
        out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=num_tokens,
                             min_new_tokens=num_tokens, **how)  # fmt: skip
    return tuple(int(t) for t in out[0, ids.shape[1] :])


def baselines(
    target: TargetBackend,
    pair: PairInfo,
    prompt_ids: Sequence[int],
    output: Sequence[int],
    settings: CaptureSettings,
    on_stage: Callable[[str], None],
) -> tuple[float | None, float | None, bool | None]:
    """The baselines ``settings`` ask for, timed (ms): plain decoding (``None`` without
    ``pair.target_model``), assisted generation (``None`` without ``pair.draft_model``);
    and whether ``output`` equals the target alone's on the exact kernels (``None``: not
    asked, or sampled: other draws)."""
    target_only_ms = assisted_ms = lossless = None
    if settings.target_only and settings.temperature == 0:
        on_stage("the target alone on the exact kernels (lossless check)")
        reference = target_greedy_decode(target, prompt_ids, settings.max_new_tokens)
        lossless = reference == tuple(output)

    def timed_ms(assisted: bool) -> float:
        start = time.perf_counter()
        library_generate(pair, prompt_ids, settings, len(output), assisted)
        return (time.perf_counter() - start) * 1e3

    if settings.target_only and pair.target_model is not None:
        on_stage("the target alone (baseline)")
        target_only_ms = timed_ms(assisted=False)
    if settings.assisted and pair.target_model is not None and pair.draft_model is not None:
        on_stage("assisted generation (baseline)")
        assisted_ms = timed_ms(assisted=True)
    return target_only_ms, assisted_ms, lossless
