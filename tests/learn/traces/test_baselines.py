"""`edgespec trace --baselines`: plain decoding and assisted generation timed on the
library's kernels, as many tokens as speculative decoding gave; losslessness judged against
the target alone on the exact kernels."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("torch")

import torch

from edgespec.learn.traces.baselines import baselines
from edgespec.learn.traces.settings import CaptureSettings, PairInfo
from edgespec.runtime.backends.batch_invariant import ATTENTION_NAME
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.models.tiny import VOCAB, tiny_draft, tiny_target

PROMPT = (5, 9, 7, 5, 11)


def _spied(model: Any, seen: list[tuple[str, bool, int, bool]]) -> None:
    """``model.generate`` recording (attention, any exact linear layer, tokens, assisted)."""
    generate = model.generate

    def spy(ids: torch.Tensor, **how: Any) -> Any:
        exact = any("forward" in vars(m) for m in model.modules())
        out = generate(ids, **how)
        attention = model.config._attn_implementation
        seen.append((attention, exact, out.shape[1] - ids.shape[1], "assistant_model" in how))
        return out

    model.generate = spy


def test_the_baselines_run_on_the_library_kernels_for_as_many_tokens_as_sd_gave() -> None:
    model = tiny_target()
    loaded_attention = model.config._attn_implementation
    target = TransformersTarget(model)  # the exact kernels
    draft = tiny_draft(list(range(0, VOCAB, 2)))
    seen: list[tuple[str, bool, int, bool]] = []
    _spied(model, seen)
    pair = PairInfo("t", "d", model, draft)
    settings = CaptureSettings(gamma_max=3, max_new_tokens=12, target_only=True, assisted=True)
    output = target_greedy_decode(target, PROMPT, 12)[:7]  # SD gave 7 tokens (a stop, say)
    stages: list[str] = []
    target_ms, assisted_ms, lossless = baselines(target, pair, PROMPT, output, settings,
                                                 stages.append)  # fmt: skip
    assert seen == [(loaded_attention, False, 7, False), (loaded_attention, False, 7, True)]
    assert target_ms is not None and target_ms > 0 and assisted_ms is not None and assisted_ms > 0
    assert lossless is False  # the exact target alone gave 12 tokens, SD's 7 are not all
    assert stages == ["the target alone on the exact kernels (lossless check)",
                      "the target alone (baseline)", "assisted generation (baseline)"]  # fmt: skip
    assert model.config._attn_implementation == ATTENTION_NAME  # switched back
    full = target_greedy_decode(target, PROMPT, 12)
    assert baselines(target, pair, PROMPT, full, settings, stages.append)[2] is True


def test_sampled_baselines_are_timed_not_compared_and_need_the_models() -> None:
    model = tiny_target()
    loaded_attention = model.config._attn_implementation
    target = TransformersTarget(model)
    seen: list[tuple[str, bool, int, bool]] = []
    _spied(model, seen)
    sampled = CaptureSettings(max_new_tokens=6, target_only=True, assisted=True,
                              temperature=0.8, top_k=5)  # fmt: skip
    output = (3, 4, 5, 6)
    target_ms, assisted_ms, lossless = baselines(target, PairInfo("t", "d", model), PROMPT,
                                                 output, sampled, lambda _: None)  # fmt: skip
    assert target_ms is not None and assisted_ms is None and lossless is None  # no draft model
    assert seen == [(loaded_attention, False, 4, False)]
    greedy = CaptureSettings(max_new_tokens=6, target_only=True)
    unnamed = baselines(target, PairInfo("t", "d"), PROMPT, output, greedy, lambda _: None)
    assert unnamed[:2] == (None, None) and unnamed[2] is not None  # checked, not timed
