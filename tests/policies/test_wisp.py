"""WISP Algorithm 1 on hand-built queues: every branch pinned.

Estimator used throughout: T̂(B) = 10 ms + 1 ms per new token (b_compute = b_read = 0),
so a request forwarding n new tokens costs 10 + n ms alone and adds n ms to a batch.
"""

from __future__ import annotations

import math
import re

import pytest

from edgespec.core.types import PendingVerification
from edgespec.policies.contracts import check_batch_plan
from edgespec.policies.estimator import BatchShape, WispCoefficients
from edgespec.policies.interfaces import BatchLimits
from edgespec.policies.registry import PolicyConfigError, build_policy
from edgespec.policies.wisp import WispBatching

EST = WispCoefficients(a_s=0.001, b_compute_s=0.0, b_read_s=0.0, c_s=0.010)
WIDE = BatchLimits(max_batch_size=16, max_batch_tokens=10_000, max_context_tokens=10_000)


def entry(
    entry_id: int,
    new: int,
    deadline: float | None = None,
    gain: float | None = None,
    cached: int = 0,
    enqueued: float = 0.0,
) -> PendingVerification:
    return PendingVerification(
        entry_id=entry_id,
        session_id=f"s{entry_id}",
        client_id="c",
        enqueued_s=enqueued,
        num_draft_tokens=4,
        num_new_tokens=new,
        num_cached_tokens=cached,
        deadline_s=deadline,
        expected_accepted=gain,
    )


def select(queue: list[PendingVerification], now: float = 0.0, **kw: object) -> tuple[int, ...]:
    guard = float(kw.pop("guard_s", 0.0))  # type: ignore[arg-type]
    policy = WispBatching(EST, guard_s=guard, work_conserving=bool(kw.pop("wc", False)))
    limits = BatchLimits(**{**dict(max_batch_size=16, max_batch_tokens=10_000), **kw})  # type: ignore[arg-type]
    plan = policy.select(queue, now, limits)
    return check_batch_plan(policy, plan, queue, limits)


def test_utility_order_for_relaxed_requests() -> None:
    # U = gain / marginal cost (ms): 1 → 3/5, 2 → 2/2, 3 → 1/10, 4 (no deadline) → 4.4/4
    queue = [entry(1, 5, 9.0, 3.0), entry(2, 2, 9.0, 2.0), entry(3, 10, 9.0, 1.0)]
    queue.append(entry(4, 4, None, 4.4))
    assert select(queue) == (4, 2, 1, 3)


def test_gain_defaults_to_draft_length_and_ties_go_to_the_oldest() -> None:
    queue = [entry(1, 4, enqueued=2.0), entry(2, 4, enqueued=1.0), entry(3, 2, gain=0.1)]
    assert select(queue) == (2, 1, 3)  # 4/4 twice (older first), then 0.1/2


def test_critical_requests_first_in_deadline_order() -> None:
    # guard 10 ms, t = 0: LST = d − (10 + n) − 10 ms
    queue = [
        entry(1, 2, 9.0, 1.0),  # relaxed, U = 1/2
        entry(2, 2, 0.020, 5.0),  # LST −2 ms: critical
        entry(3, 2, 0.018, 5.0),  # LST −4 ms: critical, earliest deadline
        entry(4, 3, 9.0, 1.0),  # relaxed, U = 1/3
    ]
    # EDF: 3 (ends 12 ms), 2 (14 ms <= 18), then utility: 1 (16 ms), 4 (19 ms > 18): stop
    assert select(queue, guard_s=0.010) == (3, 2, 1)
    # without the guard nobody is critical: utility order, all within 18 ms? 2, 3 (U 5/2),
    # 1 → 16 ms, 4 → 19 ms > 18: stop
    assert select(queue) == (2, 3, 1)


def test_critical_loop_stop_skips_the_utility_loop() -> None:
    # guard 5 ms: 2 (LST −3 ms) and 3 (LST −1 ms) are critical; 2 then 3 would end at
    # 30 ms > 22 ms: stop. Request 1 would fit (21 ms) but the utility loop is skipped.
    queue = [entry(1, 1, 9.0, 100.0), entry(2, 10, 0.022), entry(3, 10, 0.024)]
    assert select(queue, guard_s=0.005) == (2,)


def test_memory_stop_without_skipping() -> None:
    # utility order 1 (4/2), 2 (4/4), 3 (4/8)... context 2, 4 + 50 cached, 8
    queue = [entry(1, 2, gain=4.0), entry(2, 4, gain=4.0, cached=50), entry(3, 1, gain=0.5)]
    # M = 20 context tokens: 1 fits (2), 2 does not (2 + 54): stop; 3 (1 token) would fit
    # but Algorithm 1 breaks at the first infeasible request.
    assert select(queue, max_context_tokens=20) == (1,)
    assert select(queue, max_context_tokens=100) == (1, 2, 3)


def test_one_request_alone_may_exceed_memory() -> None:
    queue = [entry(1, 40, gain=4.0)]
    assert select(queue, max_context_tokens=20) == (1,)


def test_batch_size_and_token_limits() -> None:
    queue = [entry(i, 3, gain=3.0, enqueued=float(i)) for i in range(1, 6)]
    assert select(queue, max_batch_size=2) == (1, 2)
    assert select(queue, max_batch_tokens=7) == (1, 2)
    # the limits are inclusive, and an entry's context counts its new tokens (3 each)
    assert select(queue, max_batch_tokens=6) == (1, 2)
    assert select(queue, max_context_tokens=6) == (1, 2)
    assert select(queue, max_context_tokens=5) == (1,)


def test_every_eq18_count_enters_the_solo_and_batch_times() -> None:
    est = WispCoefficients(a_s=1e-3, b_compute_s=1e-4, b_read_s=1e-5, c_s=1e-2)
    policy = WispBatching(est, guard_s=0.0)
    assert policy.solo_s(entry(1, 2, cached=30)) == pytest.approx(
        est.estimate_s(BatchShape.of([(2, 30)])), rel=1e-12
    )
    # 1 (U = 9 / 8.7 ms) goes first; 2 joins iff the batch of both ends by 1's deadline
    both = est.estimate_s(BatchShape.of([(2, 30), (3, 50)]))  # 38.1 ms
    for deadline, expected in ((both, (1, 2)), (both - 1e-4, (1,))):
        queue = [entry(1, 2, deadline, 9.0, cached=30), entry(2, 3, None, 1.0, cached=50)]
        assert policy.select(queue, 0.0, WIDE).entry_ids == expected


def test_a_request_that_just_meets_its_deadline_alone_is_not_late() -> None:
    # 1 alone ends exactly at its deadline: on time (critical), so its deadline binds
    # and 2 (no deadline) cannot join; a late 1 would not bind and 2 would join
    solo = WispBatching(EST).solo_s(entry(1, 5))
    assert select([entry(1, 5, solo), entry(2, 1, None, 1.0)]) == (1,)


def test_a_request_is_critical_from_its_latest_start_time_on() -> None:
    # at t = LST exactly, 1 is critical and goes before 2's higher utility
    guard, deadline = 0.010, 0.5
    now = deadline - WispBatching(EST).solo_s(entry(1, 2)) - guard
    queue = [entry(1, 2, deadline, 0.1), entry(2, 2, None, 5.0)]
    assert select(queue, now=now, guard_s=guard, max_batch_size=1) == (1,)
    assert select(queue, now=now - 1e-6, guard_s=guard, max_batch_size=1) == (2,)


def test_an_expected_gain_of_zero_is_kept() -> None:
    # 1 is expected to get nothing accepted (U = 0), not its draft length (U = 4 / 1 ms)
    queue = [entry(1, 1, gain=0.0), entry(2, 4, gain=1.0)]
    assert select(queue, max_batch_size=1) == (2,)


@pytest.mark.parametrize("guard", [-0.001, math.inf, math.nan])
def test_guard_must_be_finite_and_non_negative(guard: float) -> None:
    message = f"guard_s must be a finite number >= 0, got {guard}"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        WispBatching(EST, guard_s=guard)


def test_deadline_stop_in_the_utility_loop() -> None:
    # 1: alone ends 12 ms, deadline 30 ms; 2: +10 ms → 22 <= 30, ok; 3: +10 → 32 > 30: stop
    queue = [entry(1, 2, 0.030, 9.0), entry(2, 10, 9.0, 5.0), entry(3, 10, 9.0, 4.0)]
    assert select(queue) == (1, 2)


def test_unreachable_deadline_does_not_stall_the_server() -> None:
    # alone it would end at 15 ms, its deadline was 5 ms: late; dispatched, never stuck
    late = entry(1, 5, 0.005)
    assert select([late]) == (1,)
    # late ones go first (EDF: theirs is the earliest deadline), without binding the batch
    queue = [entry(2, 2, 0.020, 2.0), late]
    assert select(queue) == (1, 2)  # 1 ends at 15 ms; with 2 at 17 ms <= 20
    assert select(queue, now=0.004) == (1,)  # 4 + 15 + 2 = 21 ms > 20: 2 waits
    # several late ones: most overdue first; a critical one behind them must still fit
    queue = [entry(1, 5, 0.004), entry(2, 5, 0.002), entry(3, 5, 0.003), entry(4, 1, 0.0255)]
    assert select(queue, guard_s=0.02) == (2, 3, 1)  # 4 (critical) would end at 26 > 25.5 ms
    queue[3] = entry(4, 1, 0.0265)
    assert select(queue, guard_s=0.02) == (2, 3, 1, 4)  # 26 <= 26.5 ms: it fits
    assert select(queue, guard_s=0.02, max_batch_size=2) == (2, 3)


def test_a_late_request_that_does_not_fit_ends_the_batch() -> None:
    # late 1 and 2 (30 new tokens each) cannot share 40 batch tokens; the critical 3 and the
    # relaxed 4 would fit, but none goes past the late 2 that waits (no skipping)
    queue = [entry(1, 30, 0.001), entry(2, 30, 0.002), entry(3, 1, 0.080), entry(4, 1, 9.0)]
    assert select(queue, guard_s=0.08, max_batch_tokens=40) == (1,)
    # with room for both: 10 + 62 ms = 72 ms <= 3's 80 ms deadline
    assert select(queue, guard_s=0.08, max_batch_tokens=62) == (1, 2, 3, 4)


def test_decision_is_a_pure_function_of_its_inputs() -> None:
    queue = [entry(i, 1 + i % 7, 0.01 * (i % 5) + 0.02, float(i % 3)) for i in range(40)]
    assert select(queue, now=0.003) == select(list(queue), now=0.003)


def test_registry_builds_it_from_coefficients() -> None:
    policy = build_policy(
        "batching", "wisp", {"a_s": 1e-3, "b_compute_s": 0, "b_read_s": 0, "c_s": 0.01}
    )
    assert isinstance(policy, WispBatching) and policy.guard_s == 0.005
    with pytest.raises(PolicyConfigError, match="guard_s"):
        params = {"a_s": 1, "b_compute_s": 0, "b_read_s": 0, "c_s": 0, "guard_s": -1}
        build_policy("batching", "wisp", params)
    with pytest.raises(PolicyConfigError, match="c_s"):
        build_policy("batching", "wisp", {"a_s": 1e-3, "b_compute_s": 0, "b_read_s": 0})
    assert math.isclose(policy.solo_s(entry(1, 5)), 0.015)


def test_work_conserving_reading_skips_what_does_not_fit() -> None:
    # The printed reading's stops, each one skipped past instead:
    # the critical loop's: 3 would end at 30 ms > 22 ms, 1 (21 ms) fits;
    queue = [entry(1, 1, 9.0, 100.0), entry(2, 10, 0.022), entry(3, 10, 0.024)]
    assert select(queue, guard_s=0.005, wc=True) == (2, 1)
    # memory: 2 (54 context tokens) is skipped, 3 fits;
    queue = [entry(1, 2, gain=4.0), entry(2, 4, gain=4.0, cached=50), entry(3, 1, gain=0.5)]
    assert select(queue, max_context_tokens=20, wc=True) == (1, 3)
    # a deadline in the utility loop: 3 (+10 ms) would miss 1's 30 ms, 4 (+1 ms) does not;
    queue = [entry(1, 2, 0.030, 9.0), entry(2, 10, 9.0, 5.0), entry(3, 10, 9.0, 4.0)]
    queue.append(entry(4, 1, 9.0, 0.01))
    assert select(queue, wc=True) == (1, 2, 4)
    assert select(queue) == (1, 2)
    # a late request that does not fit: the critical and relaxed ones behind it go in.
    queue = [entry(1, 30, 0.001), entry(2, 30, 0.002), entry(3, 1, 0.080), entry(4, 1, 9.0)]
    assert select(queue, guard_s=0.08, max_batch_tokens=40, wc=True) == (1, 3, 4)
    # where nothing is infeasible both readings agree.
    queue = [entry(1, 5, 9.0, 3.0), entry(2, 2, 9.0, 2.0), entry(3, 10, 9.0, 1.0)]
    assert select(queue, wc=True) == select(queue) == (2, 1, 3)


def test_registry_takes_the_reading_by_name() -> None:
    coefficients = {"a_s": 1e-3, "b_compute_s": 0, "b_read_s": 0, "c_s": 0.01}
    policy = build_policy("batching", "wisp", {**coefficients, "work_conserving": True})
    assert isinstance(policy, WispBatching) and policy.work_conserving
    assert not build_policy("batching", "wisp", coefficients).work_conserving  # type: ignore[attr-defined]
    expects = "batching policy 'wisp': parameter 'work_conserving' expects true/false, got 'yes'"
    with pytest.raises(PolicyConfigError, match=f"^{expects} \\(str\\)$"):
        build_policy("batching", "wisp", {**coefficients, "work_conserving": "yes"})
