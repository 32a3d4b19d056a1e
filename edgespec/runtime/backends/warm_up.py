"""The target's warm-up before a server says it is ready: a process's first forward pass
pays one-time costs (the kernels' first calls, the allocator's first blocks), which would
otherwise fall on the first request served."""

from __future__ import annotations

from edgespec.runtime.backends.base import ForwardItem, TargetBackend

WARM_UP_TOKENS = 8
"""The cold start's length: a prompt's prefill, then one decode step after it."""


def warm_up(target: TargetBackend, num_tokens: int = WARM_UP_TOKENS) -> None:
    """One cold start of ``num_tokens`` tokens and one decode step after it, their outputs
    and KV state dropped: nothing of a session's is touched."""
    ids = tuple(i % target.vocab_size for i in range(1, num_tokens + 1))
    cold = target.forward([ForwardItem(None, 0, ids, 1)])[0]
    target.forward([ForwardItem(cold.kv, num_tokens, ids[:1], 1)])
