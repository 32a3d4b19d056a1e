"""Side by side: distillation data with transformers' generate vs the draft-vocabulary head
(docs/LEARN.md, "The distilled draft").

    python benchmarks/probes/distill_speed.py [NEW_TOKENS] [PROMPTS]   # defaults: 24, 16

Runs both on the same GSM8K training prompts (1 torch thread) and prints seconds, tokens
per second and how many rows came out identical (they differ only after a position whose
target argmax lies outside the bundled draft's kept tokens).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from edgespec.datasets.prompts import load_prompts
from edgespec.learn.drafts.distill_data import (
    GenerationSettings,
    encode_prompt,
    generate_batch,
    generate_batch_trimmed,
)
from edgespec.models.loading import load_model
from edgespec.models.trimmed import TrimmedVocabDraft

DRAFT = Path(__file__).resolve().parents[2] / "edgespec/data/drafts/gemma3-270m-draft"


def main() -> None:
    new_tokens = int(sys.argv[1]) if len(sys.argv) > 1 else 24
    num_prompts = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    torch.set_num_threads(1)
    target = load_model("gemma3-270m")
    kept = TrimmedVocabDraft.load(DRAFT).config.draft_token_ids
    prompts = load_prompts("gsm8k", "train", num_prompts)
    encoded = [encode_prompt(target.tokenizer, p.text, 256) for p in prompts]
    settings = GenerationSettings(batch_size=num_prompts, max_new_tokens=new_tokens)
    runs: dict[str, Callable[[], dict[str, list[Any]]]] = {
        "draft-vocabulary head": lambda: generate_batch_trimmed(
            target.model, encoded, 0, {1}, settings, kept
        ),
        "transformers generate": lambda: generate_batch(target.model, encoded, 0, {1}, settings),
    }
    outputs = {}
    for name, run in runs.items():
        start = time.perf_counter()
        out = run()
        seconds = time.perf_counter() - start
        tokens = sum(len(o) for o in out["output_ids"])
        print(f"{name}: {seconds:.1f} s, {tokens} tokens, {tokens / seconds:.1f} tokens/s")
        outputs[name] = out["output_ids"]
    same = sum(int(torch.equal(a, b)) for a, b in zip(*outputs.values(), strict=True))
    print(f"identical rows: {same}/{len(encoded)}")


if __name__ == "__main__":
    main()
