"""A backend that wraps the real target, for tests that intercept its forward passes."""

from __future__ import annotations

from edgespec.runtime.backends.transformers_backend import TransformersTarget


class WrappedTarget:
    """The real target's attributes and KV operations; a subclass defines ``forward``."""

    def __init__(self, inner: TransformersTarget) -> None:
        self._inner = inner
        self.vocab_size = inner.vocab_size
        self.eos_token_ids = inner.eos_token_ids
        self.max_context_tokens = inner.max_context_tokens
        self.crop = inner.crop
        self.gather = inner.gather
        self.kv_bytes = inner.kv_bytes
