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
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from edgespec.runtime.backends.base import ForwardItem
from edgespec.runtime.backends.llamacpp_context import Entry, LlamaContext

Rows = tuple[npt.NDArray[np.float32], npt.NDArray[np.float32] | None]
"""An item's logit rows from the batch (its tree nodes' come after) and hidden rows."""


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
    hidden_logits, states = ctx.decode(embedded, True) if embedded else (None, None)
    rows: list[Rows] = []
    at_plain = at_hidden = 0
    for item in items:
        count = num_outputs(item)
        if not item.want_hidden:  # its tokens are in the first batch: never empty
            assert logits is not None
            rows.append((logits[at_plain : at_plain + count], None))
            at_plain += count
            continue
        assert hidden_logits is not None and states is not None
        end = at_hidden + count
        rows.append((hidden_logits[at_hidden:end], states[at_hidden:end].copy()))
        at_hidden = end
    return rows
