"""The line of prompts waiting to be tokenized, before their requests wait for a worker.

A text or chat prompt is tokenized (its chat template rendered first) in a thread off the
event loop, one prompt at a time and in arrival order, so that a stream's text deltas
(which take the same tokenizer) wait for at most one prompt, itself bounded in characters
as it was parsed (:mod:`.messages`). The prompts waiting weigh their characters: beyond
``TOKENIZE_QUEUE_PROMPTS`` prompts of the longest size, a request is refused at once with
a 429 and ``Retry-After``, so a flood of long prompts is answered, not piled up; a client
that leaves while its prompt waits gives its place up. Token-id prompts need no tokenizer
and skip the line.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

from edgespec.runtime.openai_api.admission import Line, busy, prometheus

T = TypeVar("T")

TOKENIZE_QUEUE_PROMPTS = 4
"""How many prompts of the longest size (``Limits.max_prompt_chars``) may wait to be
tokenized at once; a request whose prompt would pass that is refused with a 429."""


class PromptLine(Line):
    """One prompt tokenized at a time; at most ``max_waiting_chars`` characters of prompts
    waiting (use on the event loop's thread only)."""

    def __init__(self, max_waiting_chars: int) -> None:
        super().__init__(1)
        self.max_waiting_chars = max_waiting_chars
        self.waiting_chars = 0
        self.refused_total = 0

    async def acquire(self, size: int) -> None:
        """The tokenizer's turn for a prompt of ``size`` characters, waiting for it in
        line; a 429 when the prompts waiting would pass ``max_waiting_chars``. The caller
        must :meth:`release` it."""
        waits = self.held >= self.slots or self.queued > 0
        if waits and self.waiting_chars + size > self.max_waiting_chars:
            self.refused_total += 1
            raise busy(f"{self.queued} prompts of {self.waiting_chars} characters are waiting "
                       f"to be tokenized; a prompt of {size} more would pass the limit of "
                       f"{self.max_waiting_chars}")  # fmt: skip
        self.waiting_chars += size
        try:
            await self._take()
        finally:
            self.waiting_chars -= size

    def metrics(self) -> str:
        """The line's gauges and counter in Prometheus' text format."""
        return prometheus((
            ("prompts_waiting", "gauge", "prompts waiting to be tokenized", self.queued),
            ("prompts_waiting_chars", "gauge", "their characters", self.waiting_chars),
            ("prompts_refused_total", "counter", "prompts refused with 429", self.refused_total),
        ))  # fmt: skip


async def run_holding(line: Line, work: Callable[[], T]) -> T:
    """``work`` in a thread while holding a place of ``line`` (taken by the caller): the
    place is released when the thread ends, even when the caller stopped waiting first."""
    job = asyncio.ensure_future(asyncio.to_thread(work))

    def ended(done: asyncio.Future[T]) -> None:
        line.release()
        if not done.cancelled():
            done.exception()  # retrieved: a caller gone does not leave it unobserved

    job.add_done_callback(ended)
    return await asyncio.shield(job)
