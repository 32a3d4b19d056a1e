"""The draft distribution q on the wire: a drafter's rows have few nonzero entries
(:func:`edgespec.runtime.sampling.draft_sample`), so a block travels as each row's nonzero
entries (``VerifyRequest.draft_support_sizes`` / ``draft_support_ids`` / ``draft_probs``)
and is expanded on the server, after its sizes and ids are checked."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from edgespec.runtime.errors import ErrorCode, RequestError


def compact_rows(
    probs: npt.NDArray[np.float32],
) -> tuple[list[int], list[int], list[float]]:
    """K × V rows as (row sizes, token ids, values): each row's nonzero entries in id order
    (``VerifyRequest.draft_support_*``; a draft's q has at most
    :data:`~edgespec.runtime.sampling.DRAFT_SUPPORT_MAX_TOKENS` of them)."""
    rows, ids = np.nonzero(probs)
    sizes = np.bincount(rows, minlength=probs.shape[0])
    return sizes.tolist(), ids.tolist(), probs[rows, ids].tolist()


def dense_rows(msg: Any, num_tokens: int, vocab_size: int) -> npt.NDArray[np.float32]:
    """A compact q (``draft_support_sizes`` / ``draft_support_ids`` / ``draft_probs``) as
    ``num_tokens`` × ``vocab_size`` float32 rows, its sizes and ids checked first."""
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
    if ids.size and int(ids.max()) >= vocab_size:
        raise RequestError(
            ErrorCode.INVALID_ARGUMENT,
            f"draft_support_ids holds token {int(ids.max())}, outside the target's "
            f"vocabulary of {vocab_size}",
        )
    dense = np.zeros((num_tokens, vocab_size), dtype=np.float32)
    rows = np.repeat(np.arange(num_tokens), sizes)
    if np.unique(rows * vocab_size + ids).size != ids.size:
        raise RequestError(ErrorCode.INVALID_ARGUMENT, "draft_support_ids repeats a token in a row")
    dense[rows, ids] = np.asarray(msg.draft_probs, dtype=np.float32)
    return dense


def probs_from_proto(
    msg: Any, num_tokens: int, vocab_size: int, max_draft_tokens: int
) -> npt.NDArray[np.float32] | None:
    """A ``VerifyRequest``'s q: ``None`` when it carries none, dense rows as sent (K × V,
    older clients), or a compact q expanded over ``vocab_size`` tokens once its block is
    found within ``max_draft_tokens`` (what a message makes the server allocate stays
    bounded)."""
    if len(msg.draft_support_sizes) or len(msg.draft_support_ids):
        if num_tokens > max_draft_tokens:
            raise RequestError(
                ErrorCode.INVALID_ARGUMENT,
                f"draft block has {num_tokens} tokens; the limit is {max_draft_tokens}",
            )
        return dense_rows(msg, num_tokens, vocab_size)
    if not len(msg.draft_probs):
        return None
    flat = np.asarray(msg.draft_probs, dtype=np.float32)
    if not num_tokens or flat.size % num_tokens:
        raise RequestError(
            ErrorCode.INVALID_ARGUMENT,
            f"draft_probs has {flat.size} values, not a multiple of {num_tokens} tokens",
        )
    return flat.reshape(num_tokens, -1)
