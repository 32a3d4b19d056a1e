"""A batching policy's plan is verified in the order it gives (core.types.BatchPlan: "the
entry_ids to verify together now, in order"): the batch's round records follow it, on the
straightforward path that asks the policy (tests/sim/helpers.hand_trace_scenario costs)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from edgespec.core.types import BatchPlan, PendingVerification
from edgespec.policies import registry
from edgespec.policies.interfaces import BatchLimits
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import simulate
from tests.sim.helpers import Tolerance, hand_trace_scenario

EXACT: Tolerance = {"abs": 1e-12}


class _LastFirst:
    """Every queued entry, newest first (test-only)."""

    def select(
        self, queue: Sequence[PendingVerification], now_s: float, limits: BatchLimits
    ) -> BatchPlan:
        return BatchPlan(tuple(p.entry_id for p in reversed(queue)))


def test_round_records_follow_the_plans_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(registry.BATCHING, "last_first", _LastFirst)
    rows = [
        {"request_id": rid, "arrival_ms": 0.0, "prompt_tokens": 4, "output_tokens": 2,
         "drafter_id": device, "acceptance_seq": [1, 1]}
        for rid, device in (("a", 0), ("b", 1))
    ]  # fmt: skip
    data = hand_trace_scenario(tmp_path, rows, gamma=1)
    data["policies"]["batching"] = {"name": "last_first"}
    result = simulate(scenario_from_dict(data))
    assert result.path.startswith("inlined (inlined: static window;")  # the policy is asked
    # Both blocks reach the server at 0.050084 (a's first: device 0's ARRIVE runs first);
    # the plan is (b, a): one batch of 10 new tokens, 0.015 → 0.065084.
    rounds: list[tuple[object, ...]] = [
        (r.request_id, r.start_s, r.end_s, r.batch_size) for r in result.rounds
    ]
    assert rounds == [
        ("b", 0.0, pytest.approx(0.07516, **EXACT), 2),
        ("a", 0.0, pytest.approx(0.07516, **EXACT), 2),
    ]
    (batch,) = result.batches
    times: tuple[object, ...] = (batch.start_s, batch.end_s)
    assert times == (
        pytest.approx(0.050084, **EXACT),
        pytest.approx(0.065084, **EXACT),
    )
