"""Prefill in parts: a verification whose uncached context is long (a long prompt's first
round, a re-prefill after an eviction, every round without a prefix cache) forwards that
context one part per batch, so one long prompt does not hold everyone else's rounds for the
length of its prefill. (The backend's own chunks, ``TransformersTarget``'s
``prefill_chunk_tokens``, bound the attention masks *within* one pass; these parts spread a
prefill *across* batches.)

The rule (P: the server's ``ServerConfig.prefill_part_tokens``;
:func:`edgespec.core.prefill_parts.part_tokens`, the simulator's too): a verification with
U uncached context tokens and K draft tokens forwards U + K tokens in one pass when
U + K ≤ P. Otherwise its pass forwards only its next min(P, U − 1) context tokens (a
*part*: no draft, no verdict; the newest committed token always stays for the last pass),
keeps their KV, and its call goes back to the queue with the sizes of its next pass
(:class:`PrefillPart`), where the batching policy sees it beside every other call, with its
arrival time and deadline unchanged; its last pass forwards the remaining context with the
draft and is verified as any other. The KV after the parts is the KV of one pass over the
same tokens (the same positions, causal attention; a float rounding apart, as for any
cached pass), so the verdict and the committed tokens are the same.

A verification in parts must be able to finish: it is split only when its whole context
(and, for a ``return_hidden`` session, a row for each of its positions) fits the KV budget;
one that does not is one pass, as without parts. Between its passes the session's KV is in
the budget's LRU, but evicted last and, among sessions between parts, those the last batch
left out first, then the one with the fewest tokens (:func:`eviction_order`), so the one
that has come furthest finishes even when several long prompts arrive at once, and one
waiting does not starve the batch's; an evicted one starts its parts again. A
``return_hidden`` session's hidden rows of the parts are kept with its KV (counted against
the budget, a row a token), and its last pass is seen as the one pass over all its context
it replaces (:func:`merge_kept_rows`), so its reply carries the rows an unsplit pass's
would (:mod:`edgespec.runtime.server.returned_hidden`). A session that asks for its
prompt's log-probabilities is scored in parts (:mod:`.prompt_logprobs`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, replace

import numpy as np

from edgespec.core.prefill_parts import part_tokens
from edgespec.runtime.backends.base import ForwardItem, ForwardOutput
from edgespec.runtime.server.prompt_logprobs import SCORE_PART_TOKENS, num_unscored, score_part
from edgespec.runtime.server.session_record import EngineSession


@dataclass(frozen=True, slots=True)
class PrefillPart:
    """The outcome of a pass that forwarded a part of a verification's uncached context
    (``num_forwarded`` tokens) and decided nothing: the call waits for its next pass, of
    ``num_new_tokens`` new tokens over ``num_cached_tokens`` cached ones."""

    num_forwarded: int
    num_new_tokens: int
    num_cached_tokens: int


def next_part(
    s: EngineSession, num_draft: int, part_limit: int | None, budget_tokens: int
) -> int | None:
    """:func:`part_tokens` for ``s``'s next pass with ``num_draft`` draft tokens: split
    only when its whole context (and, for a ``return_hidden`` session, a row for each of its
    positions) fits ``budget_tokens``. A session scoring its prompt
    (:mod:`~edgespec.runtime.server.prompt_logprobs`) forwards all of it but its last token
    in parts of at most :data:`SCORE_PART_TOKENS` first (``part_limit`` when smaller)."""
    if num_unscored(s):
        limit = min(SCORE_PART_TOKENS, part_limit or SCORE_PART_TOKENS)
        return min(limit, len(s.tokens) - 1 - s.kv_len) or None
    context = len(s.tokens) + num_draft
    fits = context * (2 if s.spec.return_hidden else 1) <= budget_tokens
    return part_tokens(len(s.tokens) - s.kv_len, num_draft, part_limit, fits)


def next_pass_sizes(
    s: EngineSession, num_draft: int, part_limit: int | None, budget_tokens: int
) -> tuple[int, int]:
    """(new tokens, cached tokens) of ``s``'s next pass with ``num_draft`` draft tokens."""
    part = next_part(s, num_draft, part_limit, budget_tokens)
    num_new = len(s.tokens) - s.kv_len + num_draft if part is None else part
    return num_new, s.kv_len


def part_item(s: EngineSession, num_tokens: int) -> ForwardItem:
    """The pass forwarding ``s``'s next ``num_tokens`` uncached context tokens (with their
    hidden rows when ``s`` returns them, a logit row each while it scores its prompt)."""
    new = tuple(s.tokens[s.kv_len : s.kv_len + num_tokens])
    num_logits = len(new) if num_unscored(s) else 1
    return ForwardItem(s.kv, s.kv_len, new, num_logits, s.spec.return_hidden)


def keep_part(s: EngineSession, item: ForwardItem, out: ForwardOutput) -> None:
    """After a part's pass: ``s`` holds its KV, its hidden rows when ``s`` returns them, and
    its prompt's scores when it asks for them."""
    if num_unscored(s):
        score_part(s, item, out)
    if s.prefill_start is None:
        s.prefill_start = item.kv_len
    s.kv, s.kv_len = out.kv, item.kv_len + len(item.new_token_ids)
    if out.hidden is not None and item.want_hidden:
        kept = s.prefill_rows
        s.prefill_rows = out.hidden if kept is None else np.concatenate([kept, out.hidden])


def merge_kept_rows(
    s: EngineSession, item: ForwardItem, out: ForwardOutput
) -> tuple[ForwardItem, ForwardOutput]:
    """The last pass of a prefill in parts as the one pass over all its context it
    replaces: the item from the first part's start, the kept rows before the pass's own
    (every forwarded token's row, as an unsplit pass returns them). ``s`` forgets its
    parts; any other pass is returned as it is."""
    start, kept = s.prefill_start, s.prefill_rows
    s.prefill_start, s.prefill_rows = None, None
    if start is None or start == item.kv_len:
        return item, out
    earlier = tuple(s.tokens[start : item.kv_len])
    whole = replace(item, kv=None, kv_len=start, new_token_ids=earlier + item.new_token_ids)
    if kept is None or out.hidden is None:
        return whole, out
    return whole, replace(out, hidden=np.concatenate([kept, out.hidden]))


def eviction_order(
    lru: Iterable[str], sessions: Mapping[str, EngineSession], ran: Collection[str] = ()
) -> list[str]:
    """The LRU's sessions in the order the budget evicts them: the sessions between
    verifications oldest first, then those between the parts of one: first those the batch
    just run (``ran``) left out, then fewest KV tokens first (the one furthest on is kept
    longest, so one always finishes). A session waiting with most of its context cached
    kept every batch's parts out of the budget while its own pass did not fit beside
    theirs: no session advanced; the batch's oldest entry (which FCFS and decodes-first
    always take) now keeps its parts until it is done."""
    ids = list(lru)
    in_parts = sorted(
        (sid for sid in ids if sessions[sid].prefill_start is not None),
        key=lambda sid: (sid in ran, sessions[sid].kv_len),
    )
    return [sid for sid in ids if sessions[sid].prefill_start is None] + in_parts
