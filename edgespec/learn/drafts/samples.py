"""Distillation samples: read from the ``shard_*.pt`` files
:mod:`edgespec.learn.drafts.distill_data` and :mod:`edgespec.learn.drafts.distill_text`
write, kept apart from the validation prompts, and counted into a draft's kept tokens."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch


@dataclass(frozen=True, slots=True)
class Sample:
    """One distillation sequence: prompt ids, the target's continuation, its top-k logits."""

    prompt_ids: torch.Tensor
    output_ids: torch.Tensor
    topk_ids: torch.Tensor
    topk_logits: torch.Tensor


def load_shards(*directories: Path) -> list[Sample]:
    """All samples of all ``shard_*.pt`` files in ``directories`` (each sorted by name)."""
    paths = []
    for directory in directories:
        found = sorted(directory.glob("shard_*.pt"))
        if not found:
            raise FileNotFoundError(f"no distillation shards (shard_*.pt) in {str(directory)!r}")
        paths.extend(found)
    samples = []
    for path in paths:
        data = torch.load(path, weights_only=True)
        for prompt, out, ids, logits in zip(
            data["prompt_ids"],
            data["output_ids"],
            data["topk_ids"],
            data["topk_logits"],
            strict=True,
        ):
            if len(out) > 0:
                samples.append(Sample(prompt.long(), out.long(), ids.long(), logits.float()))
    return samples


def without_prompts_of(
    samples: Sequence[Sample], held_out: Sequence[Sample]
) -> tuple[list[Sample], int]:
    """``samples`` minus those whose prompt is the prompt of a ``held_out`` sample (a
    sampled continuation of a validation prompt would leak it), and how many were removed."""
    prompts = {tuple(s.prompt_ids.tolist()) for s in held_out}
    kept = [s for s in samples if tuple(s.prompt_ids.tolist()) not in prompts]
    return kept, len(samples) - len(kept)


def choose_kept_tokens(
    samples: Sequence[Sample], num_kept: int, always: Sequence[int] = ()
) -> list[int]:
    """The ``num_kept`` most frequent target ids (continuation tokens count 4× prompt tokens),
    plus ``always`` (special tokens), ordered by frequency."""
    counts: dict[int, float] = {}
    for s in samples:
        for tok in s.prompt_ids.tolist():
            counts[tok] = counts.get(tok, 0.0) + 1.0
        for tok in s.output_ids.tolist():
            counts[tok] = counts.get(tok, 0.0) + 4.0
    forced = list(dict.fromkeys(int(t) for t in always))
    ranked = [
        t for t, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if t not in forced
    ]
    return (forced + ranked)[:num_kept]


def special_token_ids(tokenizer: Any) -> dict[str, int]:
    """bos/eos/pad ids of a tokenizer, for the draft's config."""
    out = {}
    for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
        value = getattr(tokenizer, key, None)
        if value is not None:
            out[key] = int(value)
    return out
