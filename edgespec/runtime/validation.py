"""Request checks whose errors say exactly what is wrong (INVALID_ARGUMENT): the field
rules every front end shares (gRPC today). docs/RUNTIME.md "Request validation" lists
every rule of every request field, where it is enforced and its status;
tests/runtime/test_validation_table.py checks that each listed rule has a test."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from edgespec.core.tree import tree_problem
from edgespec.core.types import FloatArray
from edgespec.runtime.compact_probs import CompactProbs
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import VerifyCall

MAX_IDENTIFIER_CHARS = 128
"""The longest session id, client id, SLO class or rule name a request may carry."""


def check_identifier(field: str, value: str) -> None:
    """``INVALID_ARGUMENT`` for an identifier over :data:`MAX_IDENTIFIER_CHARS` (the value
    itself is not echoed: it may be huge)."""
    if len(value) > MAX_IDENTIFIER_CHARS:
        raise RequestError(
            ErrorCode.INVALID_ARGUMENT,
            f"{field} is {len(value)} characters; the limit is {MAX_IDENTIFIER_CHARS}",
        )


def client_id_problem(client_id: str, suffix_chars: int, suffix_told: str) -> str | None:
    """What is wrong with ``client_id`` as the start of session ids that add at most
    ``suffix_chars`` characters to it (``suffix_told``: what they are), ``None`` when its
    longest session id is within :data:`MAX_IDENTIFIER_CHARS` (the one rule of every client
    that names its sessions after its client id)."""
    room = MAX_IDENTIFIER_CHARS - suffix_chars
    if room < 1:
        return (f"no client_id fits: {suffix_told} add up to {suffix_chars} characters to it, "
                f"over the {MAX_IDENTIFIER_CHARS} of a session id")  # fmt: skip
    if not 0 < len(client_id) <= room:
        return (f"must be 1 to {room} characters, got {len(client_id)}: {suffix_told} add up "
                f"to {suffix_chars} to it, and a session id has at most "
                f"{MAX_IDENTIFIER_CHARS}")  # fmt: skip
    return None


def check_vocab(token_ids: Sequence[int], what: str, vocab: int) -> None:
    """Every id in ``[0, vocab)``; the error names the position and the id."""
    for i, tok in enumerate(token_ids):
        if not 0 <= tok < vocab:
            raise RequestError(
                ErrorCode.INVALID_ARGUMENT,
                f"{what} {i} (id {tok}) is outside the vocabulary [0, {vocab})",
            )


def check_client_times(draft_s: float, network_s: float) -> None:
    """The client-reported ``draft_s`` and ``network_s`` are finite and >= 0 (seconds)."""
    if not (math.isfinite(draft_s) and draft_s >= 0):
        raise RequestError(
            ErrorCode.INVALID_ARGUMENT, f"draft_s must be finite and >= 0, got {draft_s}"
        )
    if not (math.isfinite(network_s) and network_s >= 0):
        raise RequestError(
            ErrorCode.INVALID_ARGUMENT, f"network_s must be finite and >= 0, got {network_s}"
        )


MAX_BATCH_ID_BYTES = 128
"""The longest ``VerifyRequest.batch_id`` (UTF-8 bytes)."""
MAX_BATCH_CALLS = 1024
"""The most calls one batch group may announce (``VerifyRequest.batch_calls``): the
server's default ``max_queue_depth``; a group that cannot fill is released by its timer."""


def check_batch_group(batch_id: str, batch_calls: int) -> None:
    """A verify call's batch group: ``batch_id`` within :data:`MAX_BATCH_ID_BYTES`,
    ``batch_calls`` within :data:`MAX_BATCH_CALLS`, and a group of several named."""
    num_bytes = len(batch_id.encode())
    if num_bytes > MAX_BATCH_ID_BYTES:
        raise RequestError(
            ErrorCode.INVALID_ARGUMENT,
            f"batch_id is {num_bytes} bytes; the limit is {MAX_BATCH_ID_BYTES}",
        )
    if batch_calls > MAX_BATCH_CALLS:
        raise RequestError(
            ErrorCode.INVALID_ARGUMENT,
            f"batch_calls is {batch_calls}; the limit is {MAX_BATCH_CALLS}",
        )
    if batch_calls > 1 and not batch_id:
        raise RequestError(
            ErrorCode.INVALID_ARGUMENT,
            f"batch_calls {batch_calls} needs a batch_id (the calls of one batch share it)",
        )


DRAFT_PROB_SUM_TOLERANCE = 1e-3
"""How far a draft distribution's row sum may be from 1 (float32 rounding over a large
vocabulary stays far below it)."""


def _check_prob_values(probs: FloatArray | CompactProbs) -> None:
    """``INVALID_ARGUMENT`` naming q's first entry that is not finite or is negative."""
    values = probs.values if isinstance(probs, CompactProbs) else probs.reshape(-1)
    if np.all(np.isfinite(values)) and (not values.size or values.min() >= 0):
        return  # (the check every call pays: one pass, no masks kept)
    j = int(np.flatnonzero(~np.isfinite(values) | (values < 0))[0])
    if isinstance(probs, CompactProbs):
        row, token = int(np.searchsorted(probs.offsets, j, side="right")) - 1, int(probs.ids[j])
    else:
        row, token = divmod(j, probs.shape[1])
    raise RequestError(
        ErrorCode.INVALID_ARGUMENT,
        f"draft_probs row {row} gives token {token} {float(values[j])}: "
        "a probability is finite and >= 0",
    )


def check_draft_probs(call: VerifyCall, vocab: int) -> None:
    """Stochastic verification needs q: K × V, finite, ≥ 0, rows summing to 1,
    q_i(draft_i) > 0. A :class:`CompactProbs` q is checked on its entries alone (its other
    entries are 0): nothing of the vocabulary's size is allocated."""
    k = len(call.draft_token_ids)
    probs = call.draft_probs
    if probs is None:
        raise RequestError(ErrorCode.INVALID_ARGUMENT, "stochastic verification needs draft_probs")
    if probs.shape != (k, vocab):
        raise RequestError(
            ErrorCode.INVALID_ARGUMENT,
            f"draft_probs has shape {probs.shape}, expected ({k}, {vocab})",
        )
    _check_prob_values(probs)
    if isinstance(probs, CompactProbs):
        sums = probs.row_sums()
    else:
        sums = probs.sum(axis=1, dtype=np.float64)
    for i, total in enumerate(sums):
        if abs(total - 1.0) > DRAFT_PROB_SUM_TOLERANCE:
            raise RequestError(
                ErrorCode.INVALID_ARGUMENT,
                f"draft_probs row {i} sums to {total:.6g}; a distribution sums to 1 "
                f"(within {DRAFT_PROB_SUM_TOLERANCE})",
            )
    for i, tok in enumerate(call.draft_token_ids):
        own = probs.prob(i, tok) if isinstance(probs, CompactProbs) else probs[i, tok]
        if own <= 0:
            raise RequestError(
                ErrorCode.INVALID_ARGUMENT,
                f"draft_probs row {i} gives its own draft token {tok} probability 0",
            )


def check_tree_call(call: VerifyCall) -> None:
    """A token tree's parents are well formed, and it carries no draft_probs (its nodes are
    proposed for certain, greedy or sampling)."""
    assert call.draft_parents is not None
    problem = tree_problem(call.draft_parents, len(call.draft_token_ids))
    if problem is not None:
        raise RequestError(ErrorCode.INVALID_ARGUMENT, problem)
    if call.draft_probs is not None:
        raise RequestError(
            ErrorCode.INVALID_ARGUMENT,
            "a draft tree carries no draft_probs: its nodes are proposed for certain",
        )
