"""Distillation samples: read from the ``shard_*.pt`` files
:mod:`edgespec.learn.drafts.distill_data` and :mod:`edgespec.learn.drafts.distill_text`
write, kept apart from the validation prompts, and counted into a draft's kept tokens."""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from edgespec.errors import UserInputError


@dataclass(frozen=True, slots=True)
class Sample:
    """One distillation sequence: prompt ids, the target's continuation, its top-k logits."""

    prompt_ids: torch.Tensor
    output_ids: torch.Tensor
    topk_ids: torch.Tensor
    topk_logits: torch.Tensor


SHARD_KEYS = ("prompt_ids", "output_ids", "topk_ids", "topk_logits")
"""A shard's lists, one entry per sequence."""


def load_torch_file(path: Path, what: str) -> Any:
    """``torch.load`` of ``path`` (tensors only); a file torch cannot read (cut off,
    damaged, not a torch file) is a :class:`UserInputError` naming it as ``what``."""
    try:
        return torch.load(path, weights_only=True)
    except (RuntimeError, EOFError, OSError, ValueError, pickle.UnpicklingError) as exc:
        reason = (str(exc).splitlines() or [type(exc).__name__])[0].split(". ")[0]
        raise UserInputError(f"{path}: not a readable {what} ({reason})") from exc


def checked_lists(path: Path, data: Any, keys: Sequence[str], what: str) -> list[list[Any]]:
    """``data[key]`` for each of ``keys``: lists of one entry per sequence, equally long."""
    if not isinstance(data, dict):
        raise UserInputError(f"{path}: not a {what} (holds a {type(data).__name__}, not a dict)")
    missing = [k for k in keys if k not in data]
    if missing:
        raise UserInputError(f"{path}: not a {what} (missing {', '.join(missing)})")
    lists = [data[k] for k in keys]
    for key, value in zip(keys, lists, strict=True):
        if not isinstance(value, list | tuple):
            raise UserInputError(f"{path}: {key} is a {type(value).__name__}, not a list")
    if len({len(v) for v in lists}) > 1:
        counts = ", ".join(f"{k} {len(v)}" for k, v in zip(keys, lists, strict=True))
        raise UserInputError(f"{path}: the lists differ in length ({counts} sequences)")
    return [list(v) for v in lists]


def _tensors(where: str, **values: Any) -> None:
    for key, value in values.items():
        if not isinstance(value, torch.Tensor):
            raise UserInputError(f"{where}: {key} is a {type(value).__name__}, not a tensor")


def _token_ids(path: Path, lists: list[list[Any]]) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(prompt ids, output ids) of each sequence, checked to be 1-D tensors."""
    pairs = []
    for index, (prompt, out) in enumerate(zip(lists[0], lists[1], strict=True)):
        where = f"{path}: sequence {index}"
        _tensors(where, prompt_ids=prompt, output_ids=out)
        if prompt.dim() != 1 or out.dim() != 1:
            shapes = f"{tuple(prompt.shape)} and {tuple(out.shape)}"
            raise UserInputError(f"{where}: prompt_ids and output_ids must be 1-D, got {shapes}")
        pairs.append((prompt, out))
    return pairs


def read_token_shard(path: Path) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(prompt ids, output ids) of every sequence of a ``shard_*.pt`` file, a distillation
    shard or a text shard (which has no top-k lists); shapes checked."""
    data = load_torch_file(path, "token shard")
    return _token_ids(path, checked_lists(path, data, SHARD_KEYS[:2], "shard"))


def read_shard(path: Path) -> list[Sample]:
    """Every sequence of one distillation ``shard_*.pt`` file, its shapes checked: 1-D
    prompt and output ids, and top-k ids and logits of one shape, one row per output token,
    the logits never NaN."""
    lists = checked_lists(path, load_torch_file(path, "distillation shard"), SHARD_KEYS, "shard")
    samples = []
    for index, ((prompt, out), ids, logits) in enumerate(
        zip(_token_ids(path, lists), lists[2], lists[3], strict=True)
    ):
        where = f"{path}: sequence {index}"
        _tensors(where, topk_ids=ids, topk_logits=logits)
        if ids.dim() != 2 or ids.shape != logits.shape or ids.shape[0] != len(out):
            raise UserInputError(
                f"{where}: topk_ids {tuple(ids.shape)} and topk_logits {tuple(logits.shape)} "
                f"must both be (output tokens = {len(out)}) × k"
            )
        if logits.is_floating_point() and torch.isnan(logits).any():
            row = int(torch.isnan(logits).any(dim=1).nonzero()[0])
            raise UserInputError(f"{where}: topk_logits row {row} holds NaN")
        samples.append(Sample(prompt.long(), out.long(), ids.long(), logits.float()))
    return samples


def load_shards(*directories: Path) -> list[Sample]:
    """All samples with a continuation, of all ``shard_*.pt`` files in ``directories``
    (each sorted by name); a shard that cannot be read is an error naming it
    (:func:`read_shard`)."""
    paths = []
    for directory in directories:
        found = sorted(directory.glob("shard_*.pt"))
        if not found:
            raise FileNotFoundError(f"no distillation shards (shard_*.pt) in {str(directory)!r}")
        paths.extend(found)
    return [s for path in paths for s in read_shard(path) if len(s.output_ids) > 0]


def without_prompts_of(
    samples: Sequence[Sample], held_out: Sequence[Sample]
) -> tuple[list[Sample], int]:
    """``samples`` minus those whose prompt is the prompt of a ``held_out`` sample (a
    sampled continuation of a validation prompt would leak it), and how many were removed."""
    prompts = {tuple(s.prompt_ids.tolist()) for s in held_out}
    kept = [s for s in samples if tuple(s.prompt_ids.tolist()) not in prompts]
    return kept, len(samples) - len(kept)


def choose_kept_tokens(
    sequences: Iterable[tuple[torch.Tensor, torch.Tensor]],
    num_kept: int,
    always: Sequence[int] = (),
) -> list[int]:
    """``num_kept`` target ids: ``always`` (special tokens) first, counted within
    ``num_kept``, then the most frequent ids of ``sequences`` ((prompt ids, output ids):
    a distillation shard's samples, :func:`token_ids`, or a text shard's,
    :func:`read_token_shard`; continuation tokens count 4× prompt tokens), by frequency."""
    counts: dict[int, float] = {}
    for prompt_ids, output_ids in sequences:
        for tok in prompt_ids.tolist():
            counts[tok] = counts.get(tok, 0.0) + 1.0
        for tok in output_ids.tolist():
            counts[tok] = counts.get(tok, 0.0) + 4.0
    forced = list(dict.fromkeys(int(t) for t in always))
    ranked = [
        t for t, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if t not in forced
    ]
    return (forced + ranked)[:num_kept]


def token_ids(samples: Iterable[Sample]) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """(prompt ids, output ids) of each sample."""
    return ((s.prompt_ids, s.output_ids) for s in samples)


def special_token_ids(tokenizer: Any) -> dict[str, int]:
    """bos/eos/pad ids of a tokenizer, for the draft's config."""
    out = {}
    for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
        value = getattr(tokenizer, key, None)
        if value is not None:
            out[key] = int(value)
    return out
