"""The verification service's own counters (batches, rejections, expiries, busy) and the
:class:`~edgespec.runtime.messages.ServerStats` it reports from them and the engine's
(the ``Stats`` RPC)."""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from edgespec.core.types import BatchRecord, PendingVerification
from edgespec.runtime.messages import ServerStats
from edgespec.runtime.server.engine_sessions import EngineCounters


def _recent_batches() -> deque[BatchRecord]:
    return deque(maxlen=10_000)


@dataclass(slots=True)
class ServiceCounters:
    """``batches``: the last 10,000 batches; ``batch_sizes``: every batch's size, counted."""

    batches: deque[BatchRecord] = field(default_factory=_recent_batches)
    batch_sizes: Counter[int] = field(default_factory=Counter)
    num_expired: int = 0
    num_rejected: int = 0
    busy: bool = False

    def record_batch(
        self, entries: Sequence[PendingVerification], start_s: float, end_s: float
    ) -> None:
        """Count the batch of ``entries`` run from ``start_s`` to ``end_s``."""
        self.batch_sizes[len(entries)] += 1
        self.batches.append(
            BatchRecord(
                server_id=0,
                start_s=start_s,
                end_s=end_s,
                batch_size=len(entries),
                num_new_tokens=sum(e.num_new_tokens for e in entries),
                num_cached_tokens=sum(e.num_cached_tokens for e in entries),
            )
        )

    def stats(self, c: EngineCounters, queue_depth: int) -> ServerStats:
        """These counters with the engine's ``c`` and the queue's ``queue_depth``."""
        num_batches = sum(self.batch_sizes.values())
        total = sum(size * n for size, n in self.batch_sizes.items())
        return ServerStats(
            queue_depth=queue_depth,
            num_sessions=c.num_sessions,
            num_batches=num_batches,
            mean_batch_size=total / num_batches if num_batches else 0.0,
            max_batch_size=max(self.batch_sizes, default=0),
            batch_size_histogram=tuple(sorted(self.batch_sizes.items())),
            num_tokens_forwarded=c.num_tokens_forwarded,
            num_cache_hits=c.num_cache_hits,
            num_cache_misses=c.num_cache_misses,
            cache_hit_ratio=c.cache_hit_ratio,
            num_evictions=c.num_evictions,
            num_reprefills=c.num_reprefills,
            num_cached_tokens=c.num_cached_tokens,
            num_cached_bytes=c.num_cached_bytes,
            num_expired_sessions=self.num_expired,
            num_rejected=self.num_rejected,
            busy=self.busy,
        )
