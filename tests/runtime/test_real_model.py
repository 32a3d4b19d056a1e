"""Real target (Gemma 3 270M, sliding-window attention): slow, EDGESPEC_SLOW=1 only."""

from __future__ import annotations

import json

import pytest

from edgespec.core.types import SamplingParams
from edgespec.runtime.backends.ngram import NgramDrafter
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.inprocess import speculative_generate, target_greedy_decode


@pytest.mark.slow
def test_gemma_backend_equals_generate_beyond_the_sliding_window() -> None:
    import torch

    from edgespec.learn.prompts import prompt_dir
    from edgespec.runtime.loading import load_model_and_tokenizer

    try:
        model, tokenizer = load_model_and_tokenizer("gemma3-270m")
    except (ImportError, ValueError, OSError) as exc:
        pytest.skip(f"gemma3-270m not available: {exc}")
    path = prompt_dir() / "gsm8k_test.jsonl"
    text = " ".join(json.loads(line)["prompt"] for line in path.read_text().splitlines()[:12])
    prompt = tuple(tokenizer(text)["input_ids"])[:700]  # longer than the 512-token window
    target = TransformersTarget(model)
    mine = target_greedy_decode(target, prompt, 10)
    ids = torch.tensor([prompt])
    with torch.no_grad():
        out = model.generate(
            ids, attention_mask=torch.ones_like(ids), max_new_tokens=10, do_sample=False
        )
    assert list(mine) == out[0, len(prompt) :].tolist()
    sd = speculative_generate(target, NgramDrafter(), prompt, 4, SamplingParams(max_new_tokens=10))
    assert sd.output_token_ids == mine
    # a token tree beyond the window: explicit masks must window the sliding layers right
    from edgespec.models.loading import load_model
    from edgespec.runtime.backends.tree_draft import TreeDraft

    draft = load_model("gemma3-270m-draft").model
    tree = speculative_generate(
        target, TreeDraft(draft), prompt, 4, SamplingParams(max_new_tokens=10)
    )
    assert tree.output_token_ids == mine
    assert any(r.num_drafted > 4 for r in tree.rounds)
