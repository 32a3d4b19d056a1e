"""How a batched forward pass is priced from its entries' shapes (a server pool's
``batch_pricing``).

* ``summed`` (the default): the cost model gets the batch's sums — Σ new tokens,
  Σ (cached + new)·new query-key interactions, Σ cached tokens — as a ragged (varlen)
  kernel pays: no entry pays for another's length.
* ``padded``: the batch is priced as a padded batched kernel pays (HF transformers'
  ``generate`` with left padding, a rectangular KV cache): B rows, each padded to the
  longest cached context C and the longest new block N of the batch. The KV cache is one
  [B, C] tensor, so attention reads and scores B·C cached positions; the input is one
  [B, N] tensor, and pad positions are masked only inside attention, so every linear
  layer (and the LM head) still runs over all B·N positions. The cost model is called
  with B·N new tokens, B·(C + N)·N interactions and B·C cached tokens.

Padding is what length-aware batching (LAB, DSD §4) exists to minimise: under
``summed`` a batch of mixed lengths costs what its entries cost apart, so grouping by
length saves nothing; under ``padded`` it saves the pad rows.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from edgespec.hardware.cost_models import CostModel

BatchPricing = Literal["summed", "padded"]
"""A server pool's ``batch_pricing`` (the module docstring)."""


def padded_totals(shapes: Iterable[tuple[int, int]]) -> tuple[int, int, int, int]:
    """(batch size, new tokens, interactions, cached tokens) of the padded batch whose
    entries forward ``shapes`` = (new, cached) each: every row padded to the longest new
    block N and the longest cached context C."""
    size = max_new = max_cached = 0
    for new, cached in shapes:
        size += 1
        if new > max_new:
            max_new = new
        if cached > max_cached:
            max_cached = cached
    return size, size * max_new, size * (max_cached + max_new) * max_new, size * max_cached


def padded_batch_time_s(cost: CostModel, shapes: Iterable[tuple[int, int]]) -> float:
    """Seconds ``cost`` gives the padded batch of ``shapes`` ((new, cached) per entry)."""
    return cost.batch_time_s(*padded_totals(shapes))
