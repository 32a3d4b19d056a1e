"""Distillation data: the target's own greedy continuations of training prompts.

Generation is the CPU bottleneck, so prompts are generated in batches (left-padded, KV
cache, weights read once per step for the whole batch), grouped by length to waste
little on padding. At every generated position the target's top-k logits are kept as
soft labels (:data:`LABEL_TOP_K`; all of a cut head's tokens when it has fewer,
:func:`label_width`, as for the teacher-forced labels of
:mod:`edgespec.learn.drafts.distill_text`). Each batch is saved as its own shard
(``shard_00012.pt``) as soon as it is done, whole or not at all
(:mod:`edgespec.learn.drafts.shard_writing`), so an interrupted run loses at most one
batch and a rerun resumes where it stopped.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgespec.datasets.prompts import Prompt
from edgespec.learn.drafts.shard_writing import write_shards as write_shards  # re-exported

LABEL_TOP_K = 16
"""Labels kept per position: the target's top-k (among a cut head's or the draft's kept
tokens where there is one)."""


def label_width(num_kept: int, top_k: int = LABEL_TOP_K) -> int:
    """Labels per position among ``num_kept`` tokens: ``top_k``, or all of them when
    fewer. Training reads each sequence's labels at their own width
    (:func:`edgespec.learn.drafts.distill.batch_loss`), so narrower ones train beside
    top-16 ones, and a draft of K < 16 tokens learns the target's whole distribution
    over them."""
    return min(top_k, num_kept)


@dataclass(frozen=True, slots=True)
class GenerationSettings:
    """Batch generation limits. Prompts longer than ``max_prompt_tokens`` keep their tail.

    ``temperature`` > 0 samples the continuation at that temperature instead of taking the
    argmax: more varied contexts from the same prompts, still close to what the target
    writes. The labels stay the target's top-k at every position either way (all of a cut
    head's tokens where it has fewer, :func:`label_width`).
    """

    batch_size: int = 32
    max_prompt_tokens: int = 256
    max_new_tokens: int = 96
    top_k: int = LABEL_TOP_K
    seed: int = 0
    temperature: float = 0.0


def encode_prompt(tokenizer: Any, text: str, max_prompt_tokens: int) -> list[int]:
    """BOS + the last ``max_prompt_tokens - 1`` tokens of ``text`` (left truncation)."""
    if max_prompt_tokens < 2:
        raise ValueError(f"max_prompt_tokens must be >= 2, got {max_prompt_tokens}")
    ids: list[int] = tokenizer(text, add_special_tokens=False)["input_ids"]
    bos = tokenizer.bos_token_id
    keep = max_prompt_tokens - (1 if bos is not None else 0)
    ids = ids[-keep:]
    return [bos, *ids] if bos is not None else ids


def plan_batches(
    prompts: Sequence[Prompt], lengths: Sequence[int], batch_size: int, seed: int
) -> list[list[int]]:
    """Indices of prompts per batch: shuffled, then sorted by length inside blocks of 8 batches.

    Shuffling first mixes the datasets so that any prefix of the batches covers all of
    them; sorting inside a block keeps padding small.
    """
    order = list(range(len(prompts)))
    random.Random(seed).shuffle(order)
    block = batch_size * 8
    batches: list[list[int]] = []
    for start in range(0, len(order), block):
        chunk = sorted(order[start : start + block], key=lambda i: lengths[i])
        batches.extend(chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size))
    return batches


def generate_batch(
    model: Any, prompt_ids: Sequence[Sequence[int]], pad_id: int, eos_ids: set[int], settings: Any
) -> dict[str, list[Any]]:
    """Greedy continuations (cut after the first EOS) and top-k logits for one batch."""
    import torch
    from transformers import LogitsProcessor, LogitsProcessorList

    records: list[tuple[Any, Any]] = []

    class _TopK(LogitsProcessor):  # type: ignore[misc]
        def __call__(self, input_ids: Any, scores: Any) -> Any:
            values, indices = torch.topk(scores.float(), settings.top_k, dim=-1)
            records.append((indices.to(torch.int32), values.to(torch.float16)))
            return scores

    input_ids, mask = left_padded(prompt_ids, pad_id)
    width = input_ids.shape[1]
    with torch.inference_mode():
        out = model.generate(
            input_ids=input_ids,
            attention_mask=mask,
            max_new_tokens=settings.max_new_tokens,
            do_sample=False,
            pad_token_id=pad_id,
            logits_processor=LogitsProcessorList([_TopK()]),
        )
    topk_ids = torch.stack([r[0] for r in records], dim=1)  # B × T × k
    topk_logits = torch.stack([r[1] for r in records], dim=1)
    return _split_rows(prompt_ids, out[:, width:], topk_ids, topk_logits, eos_ids)


def generate_batch_trimmed(
    model: Any,
    prompt_ids: Sequence[Sequence[int]],
    pad_id: int,
    eos_ids: set[int],
    settings: GenerationSettings,
    head_ids: Sequence[int],
    generator: Any = None,
) -> dict[str, list[Any]]:
    """Like :func:`generate_batch`, but the head covers only ``head_ids`` (a draft's kept
    tokens): each step takes the target's argmax *among those tokens* (or, when
    ``settings.temperature`` > 0, samples among them with the torch ``generator``).

    The target's 262k-row head is most of its per-token cost, so this is several times
    faster. The continuation equals the target's true greedy one up to the first position
    where the target's argmax lies outside ``head_ids`` — a token the draft could never
    propose anyway — and every label is still the target's own preference among the
    tokens the draft can output, which is what the draft learns.
    """
    import torch

    kept = torch.tensor(list(head_ids), dtype=torch.long)
    head = model.get_output_embeddings().weight.detach()[kept]
    batch = len(prompt_ids)
    input_ids, mask = left_padded(prompt_ids, pad_id)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    steps_ids, steps_topk, steps_logits = [], [], []
    finished = torch.zeros(batch, dtype=torch.bool)
    eos = torch.tensor(sorted(eos_ids), dtype=torch.long)
    cache = None
    with torch.inference_mode():
        for _ in range(settings.max_new_tokens):
            out = model.model(
                input_ids=input_ids,
                attention_mask=mask,
                position_ids=positions,
                past_key_values=cache,
                use_cache=True,
            )
            cache = out.past_key_values
            logits = out.last_hidden_state[:, -1].float() @ head.T
            next_ids, top_ids, top_logits = _trimmed_step(logits, kept, settings, generator)
            steps_ids.append(next_ids)
            steps_topk.append(top_ids)
            steps_logits.append(top_logits)
            finished |= torch.isin(next_ids, eos)
            if bool(finished.all()):
                break
            input_ids = next_ids[:, None]
            mask = torch.cat([mask, torch.ones((batch, 1), dtype=mask.dtype)], dim=1)
            positions = positions[:, -1:] + 1
    new = torch.stack(steps_ids, dim=1)
    return _split_rows(
        prompt_ids, new, torch.stack(steps_topk, dim=1), torch.stack(steps_logits, dim=1), eos_ids
    )


def _trimmed_step(
    logits: Any, kept: Any, settings: GenerationSettings, generator: Any
) -> tuple[Any, Any, Any]:
    """One step over the kept tokens' ``logits`` (B × K): (next token ids, the top-k ids
    as int32, their logits as float16, all K when K < top-k); greedy, or sampled at
    ``settings.temperature``."""
    import torch

    values, indices = torch.topk(logits, label_width(len(kept), settings.top_k), dim=-1)
    if settings.temperature > 0:
        probs = torch.softmax(logits / settings.temperature, dim=-1)
        next_ids = kept[torch.multinomial(probs, 1, generator=generator)[:, 0]]
    else:
        next_ids = kept[indices[:, 0]]
    return next_ids, kept[indices].to(torch.int32), values.to(torch.float16)


def left_padded(prompt_ids: Sequence[Sequence[int]], pad_id: int) -> tuple[Any, Any]:
    """(input ids B × W, attention mask B × W): the prompts right-aligned, ``pad_id`` and
    mask 0 before them."""
    import torch

    width = max(len(p) for p in prompt_ids)
    input_ids = torch.full((len(prompt_ids), width), pad_id, dtype=torch.long)
    mask = torch.zeros_like(input_ids)
    for row, ids in enumerate(prompt_ids):
        input_ids[row, width - len(ids) :] = torch.tensor(ids)
        mask[row, width - len(ids) :] = 1
    return input_ids, mask


def _split_rows(
    prompt_ids: Sequence[Sequence[int]],
    new: Any,
    topk_ids: Any,
    topk_logits: Any,
    eos_ids: set[int],
) -> dict[str, list[Any]]:
    """Per-row records, each continuation cut after its first EOS."""
    import torch

    result: dict[str, list[Any]] = {
        "prompt_ids": [],
        "output_ids": [],
        "topk_ids": [],
        "topk_logits": [],
    }
    for row, ids in enumerate(prompt_ids):
        tokens = new[row].tolist()
        length = len(tokens)
        for pos, tok in enumerate(tokens):
            if tok in eos_ids:
                length = pos + 1
                break
        result["prompt_ids"].append(torch.tensor(ids, dtype=torch.int32))
        result["output_ids"].append(torch.tensor(tokens[:length], dtype=torch.int32))
        result["topk_ids"].append(topk_ids[row, :length].clone())
        result["topk_logits"].append(topk_logits[row, :length].clone())
    return result


def generate_distillation_data(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[Prompt],
    out_dir: Path,
    settings: GenerationSettings,
    progress: Callable[[int, int, float], None] | None = None,
    deadline_s: float | None = None,
    head_ids: Sequence[int] | None = None,
) -> int:
    """Generate continuations for ``prompts`` into ``out_dir`` shards; returns batches done.

    Existing shards are skipped (resume). ``deadline_s`` (a ``time.monotonic()`` value)
    stops cleanly after the batch that crosses it. ``head_ids`` switches to the faster
    :func:`generate_batch_trimmed` over those tokens; sampling (``settings.temperature``
    > 0) needs it, and batch ``i`` then draws from a generator seeded with
    ``(settings.seed, i)``, so a resumed run writes the same shards.
    """
    if settings.temperature > 0 and head_ids is None:
        raise ValueError("sampled continuations (temperature > 0) need head_ids")
    encoded = [encode_prompt(tokenizer, p.text, settings.max_prompt_tokens) for p in prompts]
    batches = plan_batches(prompts, [len(e) for e in encoded], settings.batch_size, settings.seed)
    eos = tokenizer.eos_token_id
    eos_ids = {int(eos)} if eos is not None else set()
    pad_id = int(tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0)

    def make(index: int) -> dict[str, Any]:
        batch = batches[index]
        rows = [encoded[i] for i in batch]
        data: dict[str, Any] = (
            generate_batch(model, rows, pad_id, eos_ids, settings)
            if head_ids is None
            else generate_batch_trimmed(
                model, rows, pad_id, eos_ids, settings, head_ids, _batch_generator(settings, index)
            )
        )
        data["prompt_id"] = [prompts[i].prompt_id for i in batch]
        return data

    return write_shards(out_dir, len(batches), make, progress, deadline_s)


def _batch_generator(settings: GenerationSettings, index: int) -> Any:
    import torch

    return torch.Generator().manual_seed(settings.seed * 1_000_003 + index)
