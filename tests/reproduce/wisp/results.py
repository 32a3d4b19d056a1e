"""Hand-built WISP results for the claim-row tests: metrics with given violation rates or
goodputs, and :class:`WispResults` around them."""

from __future__ import annotations

import dataclasses
from typing import Any

from edgespec.core.types import RequestRecord
from edgespec.metrics import SystemMetrics, summarize
from edgespec.reproduce.wisp.operating import OperatingPoint
from edgespec.reproduce.wisp.runner import LateSensitivity
from edgespec.reproduce.wisp.runs import Plan, WispResults
from edgespec.reproduce.wisp.setup import CLASSES

PLAN = Plan.quick()  # classes c2 and c8, qwen3-32b
LATE = LateSensitivity(1, 30.0, 0.05, {"first": 60, "utility": 40, "last": 30})


def metrics(violations: dict[str, float]) -> SystemMetrics:
    """20 finished requests per class, the given share of them too slow for their class."""
    records = []
    for cls, share in violations.items():
        target = CLASSES[cls]
        for i in range(20):
            slow = i < round(20 * share)
            records.append(
                RequestRecord(f"{cls}{i}", "d", cls, 0, 0.0, 0.1, 8 / target * (2 if slow else 1),
                              10, 8, 2, 8, 6, target)
            )  # fmt: skip
    return summarize(records, [], duration_s=10.0, num_servers=1)


def goodput(committed: float, completed: float) -> SystemMetrics:
    return dataclasses.replace(
        summarize([], [], duration_s=1.0, num_servers=1),
        goodput_tokens_per_s=completed,
        committed_goodput_tokens_per_s=committed,
    )


def results(plan: Plan = PLAN, **kw: Any) -> WispResults:
    base: dict[str, Any] = dict(
        late=LATE, capacities={}, goodput={}, curves={}, operating=None, at_operating={},
        attribution=None,
    )  # fmt: skip
    return WispResults(plan, **{**base, **kw})


def at_point(n: int, fcfs_rate: float, **runs: dict[str, float]) -> dict[str, Any]:
    """``results`` keywords for an operating point at ``n`` devices (FCFS's 4 tok/s rate
    ``fcfs_rate``) with each system's violation rates there."""
    fcfs = metrics(runs["fcfs"])
    point = OperatingPoint(n, fcfs, ((120, 0.2), (n, fcfs_rate), (180, 0.9)), (n,))
    return {"operating": point, "at_operating": {s: metrics(v) for s, v in runs.items()}}
