"""Warm-ups before a process serves: its first forward pass pays one-time costs (the
kernels' first calls, the allocator's first blocks), which would otherwise fall on the
first request served. The target's before a server says it is ready, a drafter's before
the OpenAI-compatible endpoint listens."""

from __future__ import annotations

import numpy as np

from edgespec.runtime.backends.base import DraftBackend, ForwardItem, TargetBackend

WARM_UP_TOKENS = 8
"""The cold start's length: a prompt's prefill, then one decode step after it."""


def warm_up(target: TargetBackend, num_tokens: int = WARM_UP_TOKENS) -> None:
    """One cold start of ``num_tokens`` tokens and one decode step after it, their outputs
    and KV state dropped: nothing of a session's is touched."""
    ids = _context_ids(target.vocab_size, num_tokens)
    cold = target.forward([ForwardItem(None, 0, ids, 1)])[0]
    target.forward([ForwardItem(cold.kv, num_tokens, ids[:1], 1)])


def warm_up_drafter(
    drafter: DraftBackend, vocab_size: int, num_tokens: int = WARM_UP_TOKENS
) -> None:
    """Two greedy tokens drafted after a context of ``num_tokens`` ids below
    ``vocab_size``, then the drafter's state forgotten (a drafter made for this alone: each
    request gets its own)."""
    drafter.propose(_context_ids(vocab_size, num_tokens), 2, 0.0, np.random.default_rng(0))
    drafter.reset()


def _context_ids(vocab_size: int, num_tokens: int) -> tuple[int, ...]:
    """A warm-up's context: ids 1, 2, … (modulo ``vocab_size``), ``num_tokens`` of them."""
    return tuple(i % vocab_size for i in range(1, num_tokens + 1))
