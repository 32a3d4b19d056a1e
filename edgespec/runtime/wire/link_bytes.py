"""The message sizes the emulated link charges (:mod:`edgespec.runtime.wire.emulated_link`):
the simulator's ``uplink_bytes`` and ``downlink_bytes`` (:mod:`edgespec.core.link_delay`) of
a draft block, a verification's reply and a session's opening."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from edgespec.core.link_delay import (
    DraftProbsWire,
    DraftRows,
    compact_row_bytes,
    downlink_bytes,
    uplink_bytes,
)

if TYPE_CHECKING:
    from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyReply


def verify_call_bytes(call: VerifyCall, draft_probs: DraftProbsWire = "dense") -> int:
    """Uplink size of a draft block (the simulator's ``uplink_bytes``); a ``compact`` q
    counts each row's kept entries (:func:`~edgespec.core.link_delay.compact_row_bytes`),
    the simulator's bound where a row keeps the most."""
    probs = call.draft_probs
    vocab = 0 if probs is None else int(probs.shape[-1])
    size = uplink_bytes(
        num_draft=len(call.draft_token_ids),
        num_prompt_ids=0,
        vocab_size=vocab,
        draft_rows=DraftRows("dense") if probs is not None and draft_probs == "dense" else None,
        num_hidden=sum(int(a.size) for a in call.payloads.values()),
        tree=call.draft_parents is not None,
    )
    if probs is not None and draft_probs == "compact":
        size += sum(compact_row_bytes(n, vocab) for n in _entries_per_row(probs))
    return size


def _entries_per_row(probs: Any) -> list[int]:
    """The kept entries of each row of a q held compact or dense."""
    import numpy as np

    from edgespec.runtime.compact_probs import CompactProbs

    if isinstance(probs, CompactProbs):
        return [int(n) for n in np.diff(probs.offsets)]
    return [int(n) for n in np.count_nonzero(probs, axis=-1)]


def verify_reply_bytes(reply: VerifyReply) -> int:
    """Downlink size of a verification result (the simulator's ``downlink_bytes``, plus
    the target hidden states a feature draft asked for, and the positions a semantic SH
    server asks the draft's hidden states of, 4 bytes each)."""
    hidden = reply.outcome.target_hidden
    num_hidden = int(hidden.size) if hidden is not None else 0
    asked = len(reply.outcome.hidden_request or ())
    return downlink_bytes(len(reply.outcome.committed_token_ids) + asked, num_hidden)


def open_bytes(spec: SessionSpec) -> int:
    """Uplink size of a session opening: the header and the prompt ids."""
    return uplink_bytes(0, len(spec.prompt_token_ids), 0, None)
