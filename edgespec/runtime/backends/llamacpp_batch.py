"""How a llama.cpp forward pass's items become ``llama_decode`` batches, and which rows of
them each item gets back.

Logits are asked for (the batch's per-token logits flag) only where an item reads them: its
last ``num_logits`` tokens, every token when it wants every token's hidden state
(``return_hidden``: llama.cpp gives hidden states of output rows only). Hidden states need
llama.cpp's embeddings on, and with embeddings on llama.cpp outputs EVERY token of the batch
whatever its flag, a vocabulary-wide logit row each (a 1,000-token cold start at Gemma 3's
262k vocabulary: +1 GiB). So a pass decodes in two batches: first every token whose hidden
state is not read, embeddings off (a ``hidden_of_logits_only`` item's prompt and context: no
rows at all), then the tokens whose hidden states are read, embeddings on, each an output
row anyway (that item's last ``num_logits``, a ``return_hidden`` item's every token). The
second batch's tokens follow their own sequence's in the first; the exact configuration is
batch-invariant (checked at load), so the split changes no row. A token tree's context
tokens go in the first (trees return no hidden states; their nodes are decoded after).

The second batch is decoded :data:`HIDDEN_CHUNK_ROWS` tokens per ``llama_decode`` (the KV
cache carries a sequence from one chunk to the next, and batch invariance keeps every row),
and of a ``return_hidden`` item's logit rows only its last ``num_logits`` are kept: a
client's prompt is every token of a ``return_hidden`` cold start, and llama.cpp's output
buffer, which grows to the largest batch's rows and never shrinks, stays at most
``HIDDEN_CHUNK_ROWS × vocabulary × 4`` bytes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from edgespec.runtime.backends.base import ForwardItem
from edgespec.runtime.backends.llamacpp_context import Entry, LlamaContext

Rows = tuple[npt.NDArray[np.float32], npt.NDArray[np.float32] | None]
"""An item's logit rows from the batch (its tree nodes' come after; of an item with hidden
rows, its last ``num_logits``) and hidden rows."""

HIDDEN_CHUNK_ROWS = 64
"""Tokens per ``llama_decode`` of the embeddings-on batch, each an output row: llama.cpp's
output buffer then holds at most 64 vocabulary-wide logit rows (64 MiB at Gemma 3's
262,144 tokens, against 2 GiB for a 2,048-token ``return_hidden`` cold start in one
batch), while a verification block (K + 1 ≤ 64 rows) still decodes in one call."""


def num_outputs(item: ForwardItem) -> int:
    """Logit rows of the item's batched tokens (a tree's nodes are decoded after): every
    token's when it wants every token's hidden state (llama.cpp gives those of logit rows)."""
    if item.want_hidden and not item.hidden_of_logits_only:
        return len(item.new_token_ids)
    if item.tree_parents is None:
        return item.num_logits
    return min(max(item.num_logits - len(item.tree_parents), 0), item.num_context)


def split_entries(item: ForwardItem, seq: int) -> tuple[list[Entry], list[Entry]]:
    """The item's batched tokens (all of them, or a tree's context tokens): (those decoded
    with embeddings off, those with embeddings on: the ones whose hidden states it reads)."""
    tokens = item.new_token_ids[: item.num_context]
    first_out = len(tokens) - num_outputs(item)
    entries = [(token, item.kv_len + i, seq, i >= first_out) for i, token in enumerate(tokens)]
    if not item.want_hidden:
        return entries, []
    return entries[:first_out], entries[first_out:]


def decode_items(
    ctx: LlamaContext, items: Sequence[ForwardItem], seqs: Sequence[int]
) -> list[Rows]:
    """Decode every item's batched tokens on its sequence (``seqs``, one per item) in the two
    batches of the module docstring; each item's logit rows and, when it wants them, its
    hidden rows (copies, never views of the batch's)."""
    plain: list[Entry] = []
    embedded: list[Entry] = []
    for item, seq in zip(items, seqs, strict=True):
        off, on = split_entries(item, seq)
        plain += off
        embedded += on
    logits, _ = ctx.decode(plain, False) if plain else (None, None)
    hidden_logits, states = decode_hidden(ctx, embedded, kept_logits(items))
    rows: list[Rows] = []
    at_plain = at_hidden = at_state = 0
    for item in items:
        count = num_outputs(item)
        if not item.want_hidden:  # its tokens are in the first batch: never empty
            assert logits is not None
            rows.append((logits[at_plain : at_plain + count], None))
            at_plain += count
            continue
        kept = min(item.num_logits, count)
        own = hidden_logits[at_hidden : at_hidden + kept]
        rows.append((own, states[at_state : at_state + count].copy()))
        at_hidden += kept
        at_state += count
    return rows


def kept_logits(items: Sequence[ForwardItem]) -> list[bool]:
    """For each token of the embeddings-on batch, in order: whether its logit row is read
    (the item's last ``num_logits``)."""
    kept: list[bool] = []
    for item in items:
        if item.want_hidden:
            count = num_outputs(item)
            kept += [i >= count - item.num_logits for i in range(count)]
    return kept


def decode_hidden(
    ctx: LlamaContext, entries: Sequence[Entry], kept: Sequence[bool]
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    """The embeddings-on batch, :data:`HIDDEN_CHUNK_ROWS` tokens per ``llama_decode``: (the
    logit rows ``kept`` names, every token's hidden state), in order."""
    logits = [np.zeros((0, ctx.vocab_size), np.float32)]
    states = [np.zeros((0, ctx.hidden_size), np.float32)]
    for start in range(0, len(entries), HIDDEN_CHUNK_ROWS):
        chunk_logits, chunk_states = ctx.decode(entries[start : start + HIDDEN_CHUNK_ROWS], True)
        assert chunk_states is not None
        logits.append(chunk_logits[np.asarray(kept[start : start + HIDDEN_CHUNK_ROWS])])
        states.append(chunk_states)
    return np.concatenate(logits), np.concatenate(states)
