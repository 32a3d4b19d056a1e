"""Distillation data from existing text: the target's predictions under teacher forcing.

Generating continuations costs the target one forward per token; labelling text that
already exists costs one forward per *sequence*, about 8× more positions per CPU-second
on this machine. Each text is fed to the target in one pass and, at every position, the
target's top-k logits among the draft's ``head_ids`` are kept: the draft learns what the
target would say next after any context, not only after its own output. Shards have the
format of :mod:`edgespec.learn.drafts.distill_data` (``prompt_ids`` = BOS, ``output_ids`` = the
text) and resume the same way. The hard label is the target's argmax (``topk_ids[:, 0]``),
never the text's own next token.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from edgespec.datasets.prompts import TEMPLATES, sharegpt_rows, sharegpt_split
from edgespec.learn.drafts.distill_data import label_width, write_shards

_SPEAKERS = {"human": "User", "gpt": "Assistant"}
LABEL_BATCH_SIZE = 8
"""Texts labelled in one pass (a shard holds one batch)."""


def sharegpt_conversations(skip: int = 0, limit: int | None = None) -> Iterator[str]:
    """ShareGPT *training-split* conversations as ``User: …\\nAssistant: …`` text (the
    ShareGPT prompt template, continued turn by turn), skipping the first ``skip``."""
    seen = 0
    yielded = 0
    for row in sharegpt_rows():
        if sharegpt_split(str(row.get("id", ""))) != "train":
            continue
        turns = [t for t in row.get("conversations") or [] if t.get("from") in _SPEAKERS]
        if len(turns) < 2 or turns[0].get("from") != "human":
            continue
        seen += 1
        if seen <= skip:
            continue
        first = TEMPLATES["sharegpt"].format(prompt=str(turns[0].get("value", "")).strip())
        rest = [f"{_SPEAKERS[t['from']]}: {str(t.get('value', '')).strip()}" for t in turns[1:]]
        yield first + " " + rest[0].split(": ", 1)[1] + "".join("\n" + r for r in rest[1:])
        yielded += 1
        if limit is not None and yielded >= limit:
            return


def encode_text(tokenizer: Any, text: str, max_tokens: int) -> list[int]:
    """BOS + the first ``max_tokens - 1`` tokens of ``text``."""
    ids: list[int] = tokenizer(text, add_special_tokens=False)["input_ids"]
    bos = tokenizer.bos_token_id
    return ([bos] if bos is not None else []) + ids[: max_tokens - 1]


def label_batch(
    model: Any, sequences: Sequence[Sequence[int]], head_ids: Sequence[int], top_k: int
) -> dict[str, list[Any]]:
    """One teacher-forced pass over right-padded ``sequences``; per-row shard records."""
    import torch

    kept = torch.tensor(list(head_ids), dtype=torch.long)
    head = model.get_output_embeddings().weight.detach()[kept]
    width = max(len(s) for s in sequences)
    input_ids = torch.zeros((len(sequences), width), dtype=torch.long)
    mask = torch.zeros_like(input_ids)
    for row, seq in enumerate(sequences):
        input_ids[row, : len(seq)] = torch.tensor(list(seq))
        mask[row, : len(seq)] = 1
    with torch.inference_mode():
        hidden = model.model(input_ids=input_ids, attention_mask=mask).last_hidden_state
        values, indices = torch.topk(hidden.float() @ head.T, top_k, dim=-1)
    result: dict[str, list[Any]] = {
        "prompt_ids": [],
        "output_ids": [],
        "topk_ids": [],
        "topk_logits": [],
    }
    for row, seq in enumerate(sequences):
        n = len(seq)
        # Position j predicts token j+1: labels for output tokens 1..n-1 come from 0..n-2.
        result["prompt_ids"].append(torch.tensor(list(seq[:1]), dtype=torch.int32))
        result["output_ids"].append(torch.tensor(list(seq[1:]), dtype=torch.int32))
        result["topk_ids"].append(kept[indices[row, : n - 1]].to(torch.int32))
        result["topk_logits"].append(values[row, : n - 1].to(torch.float16))
    return result


def label_texts(
    model: Any,
    tokenizer: Any,
    texts: Sequence[str],
    out_dir: Path,
    head_ids: Sequence[int],
    *,
    max_tokens: int = 256,
    batch_size: int = LABEL_BATCH_SIZE,
    top_k: int | None = None,
    progress: Callable[[int, int, float], None] | None = None,
    deadline_s: float | None = None,
) -> int:
    """Label ``texts`` into ``out_dir`` shards (existing shards skipped), ``top_k`` labels
    per position (default :func:`~edgespec.learn.drafts.distill_data.label_width` of
    ``head_ids``); returns batches done.

    ``deadline_s`` (a ``time.monotonic()`` value) stops cleanly after the batch crossing it.
    """
    if max_tokens < 3:
        raise ValueError(f"max_tokens must be >= 3, got {max_tokens}")
    encoded = [encode_text(tokenizer, t, max_tokens) for t in texts]
    encoded = [e for e in encoded if len(e) >= 3]
    batches = [encoded[i : i + batch_size] for i in range(0, len(encoded), batch_size)]
    width = label_width(len(head_ids)) if top_k is None else top_k
    return write_shards(
        out_dir,
        len(batches),
        lambda index: label_batch(model, batches[index], head_ids, width),
        progress,
        deadline_s,
    )
