"""BatchPlanner: the limits a batching policy is given (the KV budget bounds a batch's
context) and how a policy that breaks its contract, or raises, is reported."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from edgespec.config import from_dict
from edgespec.core.types import BatchPlan, PendingVerification
from edgespec.policies.contracts import PolicyContractError
from edgespec.policies.interfaces import BatchLimits
from edgespec.runtime.server.batch_planner import BatchPlanner
from edgespec.runtime.server.config import ServerConfig

CONFIG = from_dict(
    ServerConfig, {"max_batch_size": 3, "max_batch_tokens": 40, "kv_budget_tokens": 100}
)


def _entry(entry_id: int, num_new: int, num_cached: int) -> PendingVerification:
    return PendingVerification(entry_id, f"s{entry_id}", "c", 0.0, 2, num_new, num_cached)


class _Fixed:
    """Returns ``entry_ids`` (or raises ``error``) and remembers what it was asked."""

    def __init__(self, entry_ids: tuple[int, ...], error: Exception | None = None) -> None:
        self.entry_ids = entry_ids
        self.error = error
        self.asked: list[tuple[float, BatchLimits]] = []

    def select(
        self, queue: Sequence[PendingVerification], now_s: float, limits: BatchLimits
    ) -> BatchPlan:
        self.asked.append((now_s, limits))
        if self.error is not None:
            raise self.error
        return BatchPlan(self.entry_ids)


@pytest.mark.parametrize("force", [False, True])
def test_the_policy_sees_the_server_limits_at_the_clock(force: bool) -> None:
    policy = _Fixed((1, 2))
    planner = BatchPlanner(policy, CONFIG, lambda: 7.5)
    queue = [_entry(1, 5, 10), _entry(2, 5, 10)]
    assert planner.plan(queue, force) == (1, 2)
    assert policy.asked == [(7.5, BatchLimits(3, 40, 100, force))]


def test_a_batch_beyond_the_kv_budget_breaks_the_contract() -> None:
    planner = BatchPlanner(_Fixed((1, 2)), CONFIG, lambda: 0.0)
    with pytest.raises(PolicyContractError) as info:
        planner.plan([_entry(1, 5, 50), _entry(2, 5, 50)], force=False)
    assert str(info.value) == (
        "batching policy _Fixed chose 110 context tokens; max_context_tokens is 100"
    )


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (ValueError("no luck"), "batching policy _Fixed raised ValueError('no luck')"),
        # a contract error of the policy's own passes through unwrapped
        (PolicyContractError("nested plan"), "nested plan"),
    ],
)
def test_a_raising_policy_is_named(error: Exception, message: str) -> None:
    planner = BatchPlanner(_Fixed((), error), CONFIG, lambda: 0.0)
    with pytest.raises(PolicyContractError) as info:
        planner.plan([_entry(1, 5, 10)], force=True)
    assert str(info.value) == message
