"""A backend that wraps the real target, for tests that intercept its forward passes."""

from __future__ import annotations

import threading
import time
from typing import Any

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


class SlowPasses(WrappedTarget):
    """The real target, recording each pass's item lengths; the first pass (``first_s``)
    or every pass (``each_s``) held that long."""

    def __init__(self, inner: TransformersTarget, first_s: float = 0.0, each_s: float = 0.0):
        super().__init__(inner)
        self.first_s, self.each_s = first_s, each_s
        self.passes: list[list[int]] = []
        self.done = threading.Event()  # the first pass ended

    def forward(self, items: Any) -> Any:
        time.sleep(self.each_s if self.passes else max(self.first_s, self.each_s))
        self.passes.append([len(item.new_token_ids) for item in items])
        out = self._inner.forward(items)
        self.done.set()
        return out
