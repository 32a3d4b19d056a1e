"""BatchPlanner: the limits a batching policy is given (the KV budget bounds a batch's
context) and how a policy that breaks its contract, or raises, is reported."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from edgespec.config import from_dict
from edgespec.core.types import BatchPlan, PendingVerification, SamplingParams
from edgespec.policies.contracts import PolicyContractError
from edgespec.policies.interfaces import BatchLimits
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec, VerifyCall
from edgespec.runtime.server.batch_planner import BatchPlanner
from edgespec.runtime.server.config import ServerConfig
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.service import VerificationService

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


class _Popping:
    """Takes its entry out of the queue it is shown, as a list's ``pop`` does."""

    def select(self, queue: Any, now_s: float, limits: BatchLimits) -> BatchPlan:
        return BatchPlan((queue.pop(0).entry_id,))


class _Listing:
    """Answers a list of ids, not a BatchPlan."""

    def select(self, queue: Any, now_s: float, limits: BatchLimits) -> Any:
        return [e.entry_id for e in queue]


def test_a_policy_that_changes_its_queue_fails_its_calls_in_one_line(
    target: TransformersTarget,
) -> None:
    """A policy shown a list popped from it: the server refused every plan (the id was no
    longer in the list the contract checked) without failing a call, 237 refusals in 6 s,
    the client giving up after a minute; the simulator, checking against its own index,
    ran on. The queue is a tuple in every host: the policy's error fails its calls."""

    async def scenario() -> RequestError:
        engine = VerificationEngine(target)
        service = VerificationService(engine, from_dict(ServerConfig, {}), _Popping())
        await service.start()
        service.open_session(SessionSpec("s", "x", (1, 2, 3), SamplingParams(max_new_tokens=4)))
        with pytest.raises(RequestError) as info:
            await asyncio.wait_for(service.verify(VerifyCall("s", 3, ())), 10)
        await service.stop()
        return info.value

    error = asyncio.run(scenario())
    assert error.code is ErrorCode.INTERNAL
    assert error.message == (
        "batching policy _Popping raised AttributeError(\"'tuple' object has no attribute 'pop'\")"
    )


def test_an_answer_that_is_no_batch_plan_is_named_in_the_simulator_too() -> None:
    """The simulator printed AttributeError: 'list' object has no attribute 'entry_ids'."""
    from edgespec.policies.registry import BATCHING
    from edgespec.sim.setup.scenario import scenario_from_dict
    from edgespec.sim.simulator import simulate
    from tests.sim.helpers import tiny_scenario

    BATCHING["listing-probe"] = _Listing
    try:
        data = tiny_scenario(duration_s=2.0)
        data["policies"] = {"batching": {"name": "listing-probe"}}
        with pytest.raises(PolicyContractError) as info:
            simulate(scenario_from_dict(data))
    finally:
        del BATCHING["listing-probe"]
    assert str(info.value) == "batching policy _Listing returned list, not a BatchPlan"
