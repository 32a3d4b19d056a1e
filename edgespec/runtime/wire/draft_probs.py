"""The draft distribution q on the wire: a drafter's rows have few nonzero entries
(:func:`edgespec.runtime.sampling.draft_sample`), so a block travels as each row's nonzero
entries (``VerifyRequest.draft_support_sizes`` / ``draft_support_ids`` / ``draft_probs``)
and stays so on the server (:class:`~edgespec.runtime.compact_probs.CompactProbs`, its sizes
and ids checked here): what a message makes the server hold is linear in its size."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from edgespec.runtime.compact_probs import CompactProbs
from edgespec.runtime.errors import ErrorCode, RequestError


def compact_rows(
    probs: npt.NDArray[np.float32] | CompactProbs,
) -> tuple[list[int], list[int], list[float]]:
    """K × V rows as (row sizes, token ids, values): each row's nonzero entries in id order
    (``VerifyRequest.draft_support_*``; a draft's q has at most
    :data:`~edgespec.runtime.sampling.DRAFT_SUPPORT_MAX_TOKENS` of them)."""
    if isinstance(probs, CompactProbs):
        sizes = np.diff(probs.offsets)
        return sizes.tolist(), probs.ids.tolist(), probs.values.tolist()
    rows, ids = np.nonzero(probs)
    sizes = np.bincount(rows, minlength=probs.shape[0])
    return sizes.tolist(), ids.tolist(), probs[rows, ids].tolist()


def compact_from_proto(msg: Any, num_tokens: int, vocab_size: int) -> CompactProbs:
    """A compact q (``draft_support_sizes`` / ``draft_support_ids`` / ``draft_probs``) as
    ``num_tokens`` rows over ``vocab_size`` tokens, held as sent (each row's entries put in
    token order), its sizes and ids checked first."""
    sizes = np.asarray(msg.draft_support_sizes, dtype=np.int64)
    ids = np.asarray(msg.draft_support_ids, dtype=np.int64)
    if sizes.size != num_tokens:
        raise RequestError(
            ErrorCode.INVALID_ARGUMENT,
            f"draft_support_sizes has {sizes.size} entries for {num_tokens} draft tokens",
        )
    if int(sizes.sum()) != ids.size or ids.size != len(msg.draft_probs):
        raise RequestError(
            ErrorCode.INVALID_ARGUMENT,
            f"draft_support_sizes add up to {int(sizes.sum())}, but draft_support_ids has "
            f"{ids.size} and draft_probs {len(msg.draft_probs)} entries",
        )
    rows = np.repeat(np.arange(num_tokens, dtype=np.int64), sizes)
    outside = np.flatnonzero(ids >= vocab_size)
    if outside.size:
        j = int(outside[0])
        raise RequestError(
            ErrorCode.INVALID_ARGUMENT,
            f"draft_support_ids[{j}] (row {int(rows[j])}) is token {int(ids[j])}, outside the "
            f"target's vocabulary of {vocab_size}",
        )
    keys = rows * vocab_size + ids
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    repeated = np.flatnonzero(np.diff(sorted_keys) == 0)
    if repeated.size:
        row, token = divmod(int(sorted_keys[repeated[0]]), vocab_size)
        raise RequestError(
            ErrorCode.INVALID_ARGUMENT, f"draft_support_ids gives row {row} token {token} twice"
        )
    values = np.asarray(msg.draft_probs, dtype=np.float32)[order]
    offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    return CompactProbs(offsets, ids[order].astype(np.int32), values, vocab_size)


def probs_from_proto(
    msg: Any, num_tokens: int, vocab_size: int, max_draft_tokens: int
) -> npt.NDArray[np.float32] | CompactProbs | None:
    """A ``VerifyRequest``'s q: ``None`` when it carries none, dense rows as sent (K × V,
    older clients), or a compact q as a :class:`CompactProbs` once its block is found
    within ``max_draft_tokens``. Either is linear in the message's size."""
    if len(msg.draft_support_sizes) or len(msg.draft_support_ids):
        if num_tokens > max_draft_tokens:
            raise RequestError(
                ErrorCode.INVALID_ARGUMENT,
                f"draft block has {num_tokens} tokens; the limit is {max_draft_tokens}",
            )
        return compact_from_proto(msg, num_tokens, vocab_size)
    if not len(msg.draft_probs):
        return None
    flat = np.asarray(msg.draft_probs, dtype=np.float32)
    if not num_tokens:
        raise RequestError(
            ErrorCode.INVALID_ARGUMENT,
            f"draft_probs has {flat.size} values for an empty draft block (no draft tokens, no q)",
        )
    if flat.size % num_tokens:
        raise RequestError(
            ErrorCode.INVALID_ARGUMENT,
            f"draft_probs has {flat.size} values, not a multiple of {num_tokens} tokens",
        )
    return flat.reshape(num_tokens, -1)
