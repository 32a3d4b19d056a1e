"""Frozen metric records: what a run's ``metrics.json`` holds (docs/METRICS.md defines each).

Times are seconds, rates per second of the run's ``duration_s``. A statistic that is
undefined for the run (no requests, no drafted tokens, no SLO targets) is ``None`` and is
written as JSON ``null``; nothing is rounded.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any


def _plain(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, _Record):
        return value.to_dict()
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


class _Record:
    """Mixin: ``to_dict`` in field order, nested records and tuples made JSON-ready."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class LatencyStats(_Record):
    """Distribution of one per-request latency: mean and percentiles (linear interpolation)."""

    count: int
    mean_s: float
    p50_s: float
    p90_s: float
    p99_s: float
    max_s: float


@dataclass(frozen=True, slots=True)
class SloClassStats(_Record):
    """SLO attainment of one class: requests whose achieved token speed met the target.

    ``target_tokens_per_s`` is ``None`` when the class has no target (then ``attainment``
    is ``None`` too) or when its requests disagree on the target.
    """

    slo_class: str
    target_tokens_per_s: float | None
    num_requests: int
    num_with_target: int
    num_met: int
    attainment: float | None
    num_unfinished_with_target: int | None = None
    """The class's requests with a target unfinished at the run's end (``None``: the
    unfinished were not counted)."""
    num_unfinished_missed: int | None = None
    """Those of them already sure to miss it (``None``: not counted)."""
    attainment_at_least: float | None = None
    """The class's attainment over every request with a target that arrived, each
    unfinished one a miss (``None``: not counted, or none had a target)."""
    attainment_at_most: float | None = None
    """Likewise, each unfinished one not already sure to miss a hit."""


@dataclass(frozen=True, slots=True)
class TimeSplit(_Record):
    """Where requests spent their time: mean seconds per request and share of the sum."""

    mean_draft_s: float
    mean_network_s: float
    mean_queue_s: float
    mean_verify_s: float
    draft_share: float | None
    network_share: float | None
    queue_share: float | None
    verify_share: float | None


@dataclass(frozen=True, slots=True)
class BatchSizeCount(_Record):
    """How many verification batches had ``batch_size`` entries."""

    batch_size: int
    num_batches: int


@dataclass(frozen=True, slots=True)
class SystemMetrics(_Record):
    """System-level metrics of one run, aggregated from RequestRecords and BatchRecords.

    Rates divide by ``duration_s``. Token counts: ``num_output_tokens`` are committed
    (verified) output tokens of completed requests; ``num_forwarded_tokens`` are the
    positions the target servers forwarded (draft tokens, including rejected ones, plus
    uncached prefix), so ``goodput / throughput_tokens`` is the verifier's useful share.
    Two goodputs: ``goodput_tokens_per_s`` counts the tokens of completed requests only,
    ``committed_goodput_tokens_per_s`` every token committed inside the run, finished
    request or not (WISP's Table 3 goodput; ``None`` unless round records were counted).
    ``ttft`` counts from each request's arrival, ``service_ttft`` from when its device
    took it up (``RequestRecord.service_ttft_s``).
    """

    duration_s: float
    num_servers: int
    num_requests: int
    num_prompt_tokens: int
    num_output_tokens: int
    ttft: LatencyStats | None
    service_ttft: LatencyStats | None
    tpot: LatencyStats | None
    e2e: LatencyStats | None
    throughput_requests_per_s: float
    throughput_tokens_per_s: float
    goodput_tokens_per_s: float
    slo_attainment: float | None
    slo_violation_rate: float | None
    slo_classes: tuple[SloClassStats, ...]
    num_rounds: int
    num_drafted: int
    num_accepted: int
    acceptance_rate: float | None
    aal: float | None
    rounds_per_request: float | None
    num_wasted_draft_tokens: int
    wasted_draft_s: float
    time_split: TimeSplit | None
    num_batches: int
    num_forwarded_tokens: int
    num_cached_tokens: int
    mean_batch_size: float | None
    batch_sizes: tuple[BatchSizeCount, ...]
    server_busy_s: tuple[float, ...]
    server_utilization: tuple[float, ...]
    mean_server_utilization: float
    num_committed_tokens: int | None = None
    """Σ ``RoundRecord.num_committed`` over the rounds counted (every round whose
    verification ended inside the run, whether or not its request finished); ``None``
    when no round records were counted."""
    committed_goodput_tokens_per_s: float | None = None
    """``num_committed_tokens / duration_s``: verified, committed tokens per second of
    the run (WISP §5.2.2, Table 3); ``None`` when no round records were counted."""
    num_unfinished_requests: int | None = None
    """Requests that arrived inside the run and had not finished at its end (running, or
    waiting for their device): none of the per-request statistics counts them, so a run
    whose queues grow shows it here; ``None`` when the source did not count them."""
    num_unfinished_with_target: int | None = None
    """Those of them in an SLO class with a token-speed target (``None``: not counted)."""
    num_unfinished_missed: int | None = None
    """Those of them already sure to miss their target: even had all their output come at
    the run's end, its token speed would not reach it
    (:func:`~edgespec.core.unfinished.already_missed`; ``None``: not counted)."""
    slo_attainment_at_least: float | None = None
    """SLO attainment over every request with a target that arrived, the unfinished ones
    each counted a miss; ``slo_attainment`` counts the finished requests only (as WISP's
    Eq. 20 does), which a run whose queues grow flatters. ``None``: the unfinished not
    counted, or no request with a target."""
    slo_attainment_at_most: float | None = None
    """The same with the unfinished ones not already sure to miss counted as hits: the
    attainment over every arrival lies between the two however the run would go on."""

    def slo_classes_by_target(self) -> tuple[SloClassStats, ...]:
        """SLO classes ordered by target speed (loosest first), classes without one last."""
        return tuple(
            sorted(
                self.slo_classes,
                key=lambda s: (s.target_tokens_per_s is None, s.target_tokens_per_s or 0.0),
            )
        )

    def slo_class(self, name: str) -> SloClassStats:
        """The stats of SLO class ``name``; ``KeyError`` naming the known classes otherwise."""
        for stats in self.slo_classes:
            if stats.slo_class == name:
                return stats
        known = [s.slo_class for s in self.slo_classes]
        raise KeyError(f"no SLO class {name!r} in these metrics; classes: {known}")
