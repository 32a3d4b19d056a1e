"""SLO violation rates of a run's metrics, the functions a capacity search bounds
(:func:`edgespec.sweeps.capacity.capacity_search`): WISP Eq. 20's over the finished
requests, over every class or one (Cap(τ)), and that of the decided requests, the
unfinished ones already sure to miss counted too (docs/METRICS.md)."""

from __future__ import annotations

from collections.abc import Callable

from edgespec.metrics.types import SystemMetrics


def violation_rate(metrics: SystemMetrics) -> float:
    """Share of requests with an SLO target whose token speed missed it (WISP Eq. 20's Pr).

    Raises ``ValueError`` when no request had a target (the rate is undefined).
    """
    if metrics.slo_violation_rate is None:
        raise ValueError(
            f"SLO violation rate undefined: none of the {metrics.num_requests} completed "
            "requests has an SLO target (a token-speed target of its SLO class)"
        )
    return metrics.slo_violation_rate


def _missed_share(num_with_target: int, num_met: int, num_sure_misses: int) -> float:
    """Misses over the decided requests: the finished ones with a target (``num_met`` of
    them met it) and the unfinished ones already sure to miss."""
    return (num_with_target - num_met + num_sure_misses) / (num_with_target + num_sure_misses)


def decided_violation_rate(metrics: SystemMetrics) -> float:
    """The SLO violation rate over every request whose outcome is known at the run's end:
    the finished ones with a target and the unfinished ones already sure to miss it
    (``num_unfinished_missed``), those not yet sure left out as Eq. 20 leaves out every
    unfinished one. Raises ``ValueError`` where no such request had a target or the
    unfinished requests were not counted."""
    missed = metrics.num_unfinished_missed
    with_target = sum(c.num_with_target for c in metrics.slo_classes)
    if missed is None or with_target + missed == 0:
        raise ValueError(
            "SLO violation rate of the decided requests undefined: none had an SLO target, "
            "or the unfinished requests were not counted"
        )
    return _missed_share(with_target, sum(c.num_met for c in metrics.slo_classes), missed)


def class_violation_rate(
    slo_class: str, count_sure_misses: bool = False
) -> Callable[[SystemMetrics], float]:
    """A ``violation`` function for ``capacity_search`` restricted to one SLO class (Cap(τ)):
    Eq. 20's over its finished requests, or (``count_sure_misses``) that of its decided
    requests, its unfinished ones already sure to miss counted too (as
    :func:`decided_violation_rate` over every class)."""

    def rate(metrics: SystemMetrics) -> float:
        stats = metrics.slo_class(slo_class)
        missed = stats.num_unfinished_missed if count_sure_misses else 0
        if missed is None:
            raise ValueError(
                f"SLO violation rate of class {slo_class!r}'s decided requests undefined: the "
                "unfinished requests were not counted"
            )
        if stats.num_with_target + missed == 0:
            raise ValueError(
                f"SLO violation rate undefined for class {slo_class!r}: "
                f"none of its {stats.num_requests} requests has a target"
            )
        return _missed_share(stats.num_with_target, stats.num_met, missed)

    return rate
