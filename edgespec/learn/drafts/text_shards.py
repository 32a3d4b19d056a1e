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
MIN_TEXT_TOKENS = PROMPT_TOKENS + MIN_OUTPUT_TOKENS
"""The shortest text kept, and so the least ``--max-tokens``: its first
:data:`PROMPT_TOKENS` are the prompt, and at least :data:`MIN_OUTPUT_TOKENS` must follow
(below it every text would be left out)."""
MAX_TEXT_TOKENS = 32_768
"""The most ``--max-tokens`` where the target's ``config.json`` gives no context length
(``gemma3-270m`` before its first conversion, a ``.gguf`` file): Gemma 3 270M's context;
else that context length is the bound (the target's features at positions past its
context are not what it was trained to compute)."""
SEQUENCES_PER_SHARD = 64
TASK_DATASETS = ("gsm8k", "cnndm", "humaneval")


def text_tokens(text: str) -> int:
    """``--max-tokens``: an integer >= :data:`MIN_TEXT_TOKENS` (bounded above by the
    target's context, :func:`check_max_tokens`)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
    if value < MIN_TEXT_TOKENS:
        raise argparse.ArgumentTypeError(
            f"must be >= {MIN_TEXT_TOKENS} (a text's first {PROMPT_TOKENS} tokens are its "
            f"prompt, and one with fewer than {MIN_OUTPUT_TOKENS} after them is left out), "
            f"got {value}"
        )
    return value


def check_max_tokens(max_tokens: int, target: str) -> None:
    """``--max-tokens`` at most ``--target``'s context length, read from its
    ``config.json`` (its weights and tokenizer not loaded), else :data:`MAX_TEXT_TOKENS`."""
    from edgespec.learn.drafts.draft_checks import saved_context_tokens

    context = saved_context_tokens(target)
    limit = MAX_TEXT_TOKENS if context is None else context
    if max_tokens > limit:
        why = (
            f", the context length of --target {target} (its config.json's max_position_embeddings)"
            if context is not None
            else f" (Gemma 3 270M's context; --target {target} has no config.json to give its own)"
        )
        raise UserInputError(f"--max-tokens must be <= {limit:,}{why}, got {max_tokens:,}")


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
        "--max-tokens",
        type=text_tokens,
        default=256,
        help=f"tokens per sequence, BOS first: at least {MIN_TEXT_TOKENS} (a text's first "
        f"{PROMPT_TOKENS} are its prompt, {MIN_OUTPUT_TOKENS} more must follow), at most the "
        f"target's context length (else {MAX_TEXT_TOKENS:,}) (default 256)",
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

    Texts of fewer than :data:`MIN_TEXT_TOKENS` tokens are left out.
    """
    import torch

    from edgespec.learn.drafts.distill_text import encode_text

    sequences = [encode_text(tokenizer, t, max_tokens) for t in texts]
    sequences = [s for s in sequences if len(s) >= MIN_TEXT_TOKENS]
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

    check_max_tokens(args.max_tokens, args.target)
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
