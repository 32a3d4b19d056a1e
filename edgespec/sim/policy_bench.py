"""``edgespec bench policy``: what one batching decision costs at a given queue depth.

Every registered batching policy (``wisp`` with WISP's Table 12 estimator) is shown the
same seeded synthetic queue — a mix of cold starts and cached follow-ups from four SLO
classes with token-speed deadlines — and timed over repeated ``select`` calls
(median of ``repeat`` timings of ``calls`` decisions each, process CPU time).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from edgespec.core.types import PendingVerification
from edgespec.hardware.cost_models import load_wisp_coefficients
from edgespec.policies.interfaces import BatchingPolicy, BatchLimits
from edgespec.policies.registry import BATCHING, build_policy

DEPTHS = (10, 100, 1000)
LIMITS = BatchLimits(max_batch_size=256, max_batch_tokens=8192, max_context_tokens=200_000)


def synthetic_queue(depth: int, seed: int = 0) -> list[PendingVerification]:
    """``depth`` queued verifications: 10% cold starts (whole prompt new), the rest 4 draft
    tokens on a cached prefix, classes 2/4/6/8 tok/s, deadlines 0–0.5 s from now."""
    rng = np.random.default_rng(seed)
    queue = []
    for i in range(depth):
        cold = rng.random() < 0.1
        context = int(rng.integers(200, 1200))
        target = float(rng.choice([2.0, 4.0, 6.0, 8.0]))
        queue.append(
            PendingVerification(
                entry_id=i,
                session_id=f"s{i}",
                client_id=f"c{i}",
                enqueued_s=float(rng.uniform(-0.5, 0.0)),
                num_draft_tokens=4,
                num_new_tokens=context if cold else 5,
                num_cached_tokens=0 if cold else context - 5,
                slo_class=f"{target:g}",
                deadline_s=float(rng.uniform(0.0, 0.5)),
                expected_accepted=float(4 * rng.uniform(0.3, 0.9)),
            )
        )
    return queue


def decision_time_s(
    policy: BatchingPolicy, queue: Sequence[PendingVerification], calls: int, repeat: int
) -> float:
    """Median CPU seconds per ``select`` call."""
    timings = []
    for _ in range(repeat):
        start = time.process_time()
        for _ in range(calls):
            policy.select(queue, 0.0, LIMITS)
        timings.append((time.process_time() - start) / calls)
    return sorted(timings)[len(timings) // 2]


def bench_policies(
    depths: Sequence[int] = DEPTHS, repeat: int = 5, budget_calls: int = 20_000
) -> list[dict[str, Any]]:
    """One row per (policy, depth): microseconds per decision."""
    params = {"wisp": dataclasses.asdict(load_wisp_coefficients("a100-qwen3-32b"))}  # Table 12
    rows = []
    for name in sorted(BATCHING):
        policy = build_policy("batching", name, params.get(name, {}))
        for depth in depths:
            queue = synthetic_queue(depth)
            calls = max(5, budget_calls // depth)
            seconds = decision_time_s(policy, queue, calls, repeat)
            rows.append({"policy": name, "queue_depth": depth, "us_per_decision": seconds * 1e6})
    return rows
