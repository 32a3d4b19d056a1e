"""The target's hidden rows a ``return_hidden`` session's reply carries.

A verification forwards the session's uncached tokens and the draft; its reply carries the
hidden rows of the committed positions among them from :func:`first_returned_position` on:
every row from 0 in the session's first committed round (the prompt's, on a cold start),
and in every later round only those from its newest committed token (position
``prefix_len - 1``, the previous round's extra token, forwarded now) on, plus the accepted
draft tokens'. The client holds the rows before it already: a round's call comes after the
reply that committed its prefix, which carried the rows up to ``prefix_len - 2`` (an edge
feature draft takes rows from any position it knows, ``FeatureDraft.observe_target_hidden``
in :mod:`edgespec.runtime.backends.feature_draft`). So a pass that re-forwards the whole
context (a re-prefill after an eviction, or no prefix cache) returns no more rows than a
cached one: every reply but a session's first carries at most 1 + K rows, and so does the
outcome the session keeps for a retry, which counts against the token budget beside the KV
(:mod:`edgespec.runtime.server.engine_sessions`). A reopened session is a new one: its
first reply carries every row again.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from edgespec.runtime.backends.base import ForwardItem


def first_returned_position(committed_before: bool, prefix_len: int) -> int:
    """The first position whose row a reply carries: 0 for the session's first committed
    round, else ``prefix_len - 1`` (``committed_before``: the session committed a round)."""
    return prefix_len - 1 if committed_before else 0


def num_unreturned(item: ForwardItem, first_position: int) -> int:
    """How many of the pass's leading forwarded tokens come before ``first_position``
    (their rows are not returned, nor kept)."""
    return max(first_position - item.kv_len, 0)


def returned_rows(
    hidden: npt.NDArray[np.float32] | None,
    item: ForwardItem,
    num_draft: int,
    accepted: Sequence[int],
    first_position: int,
) -> tuple[npt.NDArray[np.float32] | None, int]:
    """The rows a reply carries and the position of its first: the forwarded context tokens
    from ``first_position`` on and the ``accepted`` draft nodes (already cut to the
    committed tokens). ``hidden``: the rows of the pass's last ``len(hidden)`` forwarded
    tokens (all of them, or those a pass kept for its SH follow-up held); ``None`` (no
    ``return_hidden``): none, from ``item.kv_len``."""
    if hidden is None:
        return None, item.kv_len
    offset = len(item.new_token_ids) - int(hidden.shape[0])
    skip = num_unreturned(item, first_position)
    assert offset <= skip, f"{offset} rows missing, only {skip} not returned"
    num_context = len(item.new_token_ids) - num_draft
    index = [*range(skip, num_context), *(num_context + i for i in accepted)]
    return hidden[[i - offset for i in index]], item.kv_len + skip
