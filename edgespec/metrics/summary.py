"""``summarize``: SystemMetrics from completed runs' record lists (docs/METRICS.md).

Pure aggregation over the shared record types of ``edgespec.core.types``; the simulator
and the real runtime both feed it. For long runs use ``MetricsAccumulator`` online:
the two give identical results.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from edgespec.core.types import BatchRecord, RequestRecord
from edgespec.metrics.accumulator import MetricsAccumulator
from edgespec.metrics.types import SystemMetrics

__all__ = ["SystemMetrics", "class_violation_rate", "summarize", "violation_rate"]


def summarize(
    requests: Iterable[RequestRecord],
    batches: Iterable[BatchRecord],
    duration_s: float,
    num_servers: int,
) -> SystemMetrics:
    """Metrics of a run of ``duration_s`` seconds on ``num_servers`` target servers.

    ``requests`` are the completed requests, ``batches`` every verification forward pass.
    Raises ``ValueError`` naming the record when one is inconsistent.
    """
    acc = MetricsAccumulator()
    for request in requests:
        acc.add_request(request)
    for batch in batches:
        acc.add_batch(batch)
    return acc.finish(duration_s, num_servers)


def violation_rate(metrics: SystemMetrics) -> float:
    """Share of requests with an SLO target whose token speed missed it (WISP Eq. 20's Pr).

    Raises ``ValueError`` when no request had a target (the rate is undefined).
    """
    if metrics.slo_violation_rate is None:
        raise ValueError(
            f"SLO violation rate undefined: none of the {metrics.num_requests} completed "
            "requests has an SLO target (slo_tokens_per_s)"
        )
    return metrics.slo_violation_rate


def class_violation_rate(slo_class: str) -> Callable[[SystemMetrics], float]:
    """A ``violation`` function for ``capacity_search`` restricted to one SLO class (Cap(τ))."""

    def rate(metrics: SystemMetrics) -> float:
        stats = metrics.slo_class(slo_class)
        if stats.attainment is None:
            raise ValueError(
                f"SLO violation rate undefined for class {slo_class!r}: "
                f"none of its {stats.num_requests} requests has a target"
            )
        return (stats.num_with_target - stats.num_met) / stats.num_with_target

    return rate
