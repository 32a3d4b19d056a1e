"""`edgespec train text-shards`: training text as token shards for `train feature-draft`.

A feature draft learns from the target's own features at every position, so any text
serves as training data without labelling. Each ShareGPT *training-split* conversation
(``User: …\\nAssistant: …``, :func:`edgespec.learn.drafts.distill_text.sharegpt_conversations`)
and each GSM8K / CNN-DM / HumanEval training prompt becomes one sequence of at most
``--max-tokens`` tokens (BOS first). Its first ``PROMPT_TOKENS`` tokens are written as
``prompt_ids`` (so the prompt hold-out of the training command separates texts) and the
rest as ``output_ids``, ``SEQUENCES_PER_SHARD`` sequences per ``shard_*.pt``: the shard
format ``edgespec train feature-draft --data-dir`` reads. Each shard is written whole or
not at all (:func:`~edgespec.output_paths.write_atomically`), so a run stopped part-way
leaves no truncated shard for a training run to read, and the temporary files of one killed
outright are removed by the next run, as the distillation shards' are
(:func:`~edgespec.learn.drafts.shard_writing.remove_leftover_temporaries`). Before its
first shard the folder records whose tokenizer and which texts its shards hold
(:class:`~edgespec.learn.drafts.shard_manifest.TextShardSettings` in
``shard_settings.json``): a run with others is refused before the tokenizer loads, naming
each (it would overwrite some of the shards and leave the rest), as is a folder of
distillation shards or one holding a model (:mod:`edgespec.learn.drafts.shard_kinds`), and
``train feature-draft`` refuses the folder for another target. Text shards carry no target
labels, so train with ``--kept-from DRAFT`` (the kept tokens cannot be chosen from them).
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from edgespec.argument_types import non_negative_int
from edgespec.errors import UserInputError
from edgespec.learn.drafts import shard_manifest as manifest
from edgespec.learn.drafts.shard_writing import remove_leftover_temporaries
from edgespec.models.registry import model_identity
from edgespec.output_paths import writable_output_folder, write_atomically

PROMPT_TOKENS = 32
MIN_OUTPUT_TOKENS = 9  # a shorter text gives too few training positions to keep
SEQUENCES_PER_SHARD = 64
TASK_DATASETS = ("gsm8k", "cnndm", "humaneval")


def add_arguments(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    text = (
        "write training text (ShareGPT conversations, task prompts) as token shards "
        "for feature-draft --data-dir"
    )
    p = sub.add_parser("text-shards", help=text, description=text)
    p.add_argument(
        "--out",
        type=writable_output_folder,
        required=True,
        help="directory for the shard_*.pt files",
    )
    p.add_argument(
        "--target",
        default="gemma3-270m",
        help="whose tokenizer, name or path (default gemma3-270m)",
    )
    p.add_argument(
        "--conversations",
        type=non_negative_int,
        default=2000,
        help="ShareGPT conversations (default 2000)",
    )
    p.add_argument(
        "--max-tokens", type=int, default=256, help="tokens per sequence, BOS first (default 256)"
    )


def training_texts(conversations: int) -> list[str]:
    """``conversations`` ShareGPT training conversations, then every training prompt of the
    task datasets."""
    from edgespec.datasets.prompts import load_prompts
    from edgespec.learn.drafts.distill_text import sharegpt_conversations

    texts = list(sharegpt_conversations(limit=conversations)) if conversations > 0 else []
    for name in TASK_DATASETS:
        texts += [p.text for p in load_prompts(name, "train")]
    return texts


def write_text_shards(
    tokenizer: Any, texts: Sequence[str], out: Path, max_tokens: int
) -> tuple[int, int]:
    """Encode ``texts`` and write them as shards into ``out``, each whole or not at all,
    after removing the shard temporaries of runs killed outright; returns (sequences,
    tokens).

    Texts of at most ``PROMPT_TOKENS + MIN_OUTPUT_TOKENS - 1`` tokens are left out.
    """
    import torch

    from edgespec.learn.drafts.distill_text import encode_text

    sequences = [encode_text(tokenizer, t, max_tokens) for t in texts]
    sequences = [s for s in sequences if len(s) >= PROMPT_TOKENS + MIN_OUTPUT_TOKENS]
    out.mkdir(parents=True, exist_ok=True)
    remove_leftover_temporaries(out)
    for index in range(0, len(sequences), SEQUENCES_PER_SHARD):
        chunk = sequences[index : index + SEQUENCES_PER_SHARD]
        shard = {
            "prompt_ids": [torch.tensor(s[:PROMPT_TOKENS]) for s in chunk],
            "output_ids": [torch.tensor(s[PROMPT_TOKENS:]) for s in chunk],
        }
        path = out / f"shard_{index // SEQUENCES_PER_SHARD:05d}.pt"
        write_atomically(path, functools.partial(torch.save, shard))
    return len(sequences), sum(map(len, sequences))


def text_shard_settings(
    target: str, conversations: int, max_tokens: int
) -> manifest.TextShardSettings:
    """The :class:`~edgespec.learn.drafts.shard_manifest.TextShardSettings` of a run with
    ``--target`` ``target`` (named as the records name it), ``--conversations`` and
    ``--max-tokens``."""
    return manifest.TextShardSettings(
        target=model_identity(target),
        task_datasets=TASK_DATASETS,
        conversations=conversations,
        max_tokens=max_tokens,
        prompt_tokens=PROMPT_TOKENS,
        min_output_tokens=MIN_OUTPUT_TOKENS,
        sequences_per_shard=SEQUENCES_PER_SHARD,
    )


def run(args: argparse.Namespace) -> int:
    from edgespec.models.loading import load_tokenizer

    if args.max_tokens < PROMPT_TOKENS + MIN_OUTPUT_TOKENS:
        raise UserInputError(
            f"--max-tokens must be >= {PROMPT_TOKENS + MIN_OUTPUT_TOKENS}, got {args.max_tokens}"
        )
    settings = text_shard_settings(args.target, args.conversations, args.max_tokens)
    fields = manifest.TEXT_SHARD_FIELDS
    if (warning := manifest.check_shard_folder("--out", args.out, settings, fields)) is not None:
        print(warning, file=sys.stderr)
    tokenizer = load_tokenizer(args.target)  # the tokenizer alone: no weights load
    if tokenizer is None:
        raise UserInputError(f"--target {args.target!r} has no tokenizer")
    texts = training_texts(args.conversations)
    if not manifest.has_shards(args.out):
        manifest.record_settings(args.out, settings)
    count, tokens = write_text_shards(tokenizer, texts, args.out, args.max_tokens)
    print(f"{count} sequences, {tokens} tokens -> {args.out}")
    return 0
