"""The verification service's own counters (batches, verifications, sessions, rejections by
code, expiries, busy, latency histograms), the :class:`~edgespec.runtime.messages.ServerStats`
it reports from them and the engine's (the ``Stats`` RPC), and the fuller
:class:`ServiceMetrics` the Prometheus endpoint serves (:mod:`.prometheus`)."""

from __future__ import annotations

import bisect
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from edgespec.core.types import BatchRecord, PendingVerification
from edgespec.runtime.errors import ErrorCode
from edgespec.runtime.messages import ServerStats, VerifyOutcome
from edgespec.runtime.server.engine_counters import EngineCounters

BATCH_SIZE_BUCKETS: tuple[float, ...] = (1, 2, 4, 8, 16, 32, 64, 128)
SECONDS_BUCKETS: tuple[float, ...] = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class HistogramSnapshot:
    """A Prometheus histogram: ``cumulative[i]`` observations ≤ ``bounds[i]``, then ``count``
    (the ``+Inf`` bucket) and the observations' ``sum``."""

    bounds: tuple[float, ...]
    cumulative: tuple[int, ...]
    count: int
    sum: float


@dataclass(slots=True)
class Histogram:
    """Observations counted into the buckets ``le`` each bound (Prometheus semantics)."""

    bounds: tuple[float, ...]
    counts: list[int] = field(default_factory=list)  # per bucket, the last one is +Inf
    total: float = 0.0

    def __post_init__(self) -> None:
        if not self.counts:
            self.counts = [0] * (len(self.bounds) + 1)

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.total += value

    def snapshot(self) -> HistogramSnapshot:
        running, cumulative = 0, []
        for n in self.counts[:-1]:
            running += n
            cumulative.append(running)
        return HistogramSnapshot(self.bounds, tuple(cumulative), sum(self.counts), self.total)


def _seconds() -> Histogram:
    return Histogram(SECONDS_BUCKETS)


@dataclass(frozen=True, slots=True)
class ServiceMetrics:
    """What the Prometheus endpoint serves: the ``Stats`` snapshot and the service's own
    totals since it started (docs/RUNTIME.md, "Observability", has the metric names).

    ``num_verifications``: rounds decided and answered (a client gone before its answer
    and a hidden-state request are not counted), with their drafted, accepted and committed
    tokens; ``rejected_by_code``: every :class:`ErrorCode`, with the requests the service
    refused with it; ``num_prefill_parts``: the engine's; ``num_resent``: verify calls
    repeating one the server had (a resend taking over its queued or running call, given
    its first sending's place, or answered from its committed round); ``semantic_sessions`` and
    ``accepted_mismatches``: the engine's, by threshold (:class:`EngineCounters`)."""

    stats: ServerStats
    num_verifications: int
    num_drafted_tokens: int
    num_accepted_tokens: int
    num_committed_tokens: int
    num_sessions_opened: int
    num_sessions_closed: int
    num_prefill_parts: int
    num_resent: int
    rejected_by_code: tuple[tuple[str, int], ...]
    semantic_sessions: tuple[tuple[int, int], ...]
    accepted_mismatches: tuple[tuple[int, int], ...]
    batch_size: HistogramSnapshot
    batch_seconds: HistogramSnapshot
    queue_wait_seconds: HistogramSnapshot


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
    num_verifications: int = 0
    num_drafted_tokens: int = 0
    num_accepted_tokens: int = 0
    num_committed_tokens: int = 0
    num_sessions_opened: int = 0
    num_sessions_closed: int = 0
    num_resent: int = 0
    rejected_by_code: Counter[str] = field(default_factory=Counter)
    batch_size: Histogram = field(default_factory=lambda: Histogram(BATCH_SIZE_BUCKETS))
    batch_seconds: Histogram = field(default_factory=_seconds)
    queue_wait_seconds: Histogram = field(default_factory=_seconds)

    def rejected(self, code: ErrorCode) -> None:
        """Count a request the service refused with ``code``."""
        self.num_rejected += 1
        self.rejected_by_code[code.value] += 1

    def answered(self, outcome: VerifyOutcome, queue_s: float) -> None:
        """Count a decided round answered after ``queue_s`` in the queue."""
        self.num_verifications += 1
        self.num_drafted_tokens += outcome.result.num_drafted
        self.num_accepted_tokens += outcome.result.num_accepted
        self.num_committed_tokens += len(outcome.committed_token_ids)
        self.queue_wait_seconds.observe(queue_s)

    def record_batch(
        self, entries: Sequence[PendingVerification], start_s: float, end_s: float
    ) -> None:
        """Count the batch of ``entries`` run from ``start_s`` to ``end_s``."""
        self.batch_sizes[len(entries)] += 1
        self.batch_size.observe(len(entries))
        self.batch_seconds.observe(end_s - start_s)
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
        """These counters with the engine's ``c`` and the queue's ``queue_depth``. Read by
        the metrics endpoint's thread while the event loop counts: the batch sizes copied
        first, whole (a scrape iterating them as a new size was counted raised "dictionary
        changed size during iteration", a 500)."""
        sizes = dict(self.batch_sizes)  # one C-level copy, under the GIL
        num_batches = sum(sizes.values())
        total = sum(size * n for size, n in sizes.items())
        return ServerStats(
            queue_depth=queue_depth,
            num_sessions=c.num_sessions,
            num_batches=num_batches,
            mean_batch_size=total / num_batches if num_batches else 0.0,
            max_batch_size=max(sizes, default=0),
            batch_size_histogram=tuple(sorted(sizes.items())),
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

    def metrics(self, c: EngineCounters, queue_depth: int) -> ServiceMetrics:
        """The Prometheus view: :meth:`stats` and the service's totals."""
        return ServiceMetrics(
            stats=self.stats(c, queue_depth),
            num_verifications=self.num_verifications,
            num_drafted_tokens=self.num_drafted_tokens,
            num_accepted_tokens=self.num_accepted_tokens,
            num_committed_tokens=self.num_committed_tokens,
            num_sessions_opened=self.num_sessions_opened,
            num_sessions_closed=self.num_sessions_closed,
            num_prefill_parts=c.num_prefill_parts,
            num_resent=self.num_resent,
            rejected_by_code=tuple((e.value, self.rejected_by_code[e.value]) for e in ErrorCode),
            semantic_sessions=c.semantic_sessions,
            accepted_mismatches=c.accepted_mismatches,
            batch_size=self.batch_size.snapshot(),
            batch_seconds=self.batch_seconds.snapshot(),
            queue_wait_seconds=self.queue_wait_seconds.snapshot(),
        )
