"""The shared checks of a policy's answer: each contract clause, with its exact message."""

from __future__ import annotations

import numpy as np
import pytest

from edgespec.core.types import BatchPlan, PendingVerification, ServerLoad
from edgespec.policies.contracts import (
    PolicyContractError,
    batch_plan_problem,
    check_batch_plan,
    check_route,
    check_window,
    decide_route,
    decide_window,
)
from edgespec.policies.interfaces import BatchLimits, WindowDecision, WindowObservation
from edgespec.policies.loads import LoadView


def _entry(entry_id: int, new: int, cached: int = 0) -> PendingVerification:
    return PendingVerification(entry_id, f"s{entry_id}", "c", 0.0, 1, new, cached)


QUEUE = [_entry(1, 5, 100), _entry(2, 3, 50), _entry(3, 900, 0)]
LIMITS = BatchLimits(max_batch_size=2, max_batch_tokens=100, max_context_tokens=200)


@pytest.mark.parametrize(
    ("ids", "limits", "problem"),
    [
        ((1, 2), LIMITS, None),
        ((3,), LIMITS, None),  # one entry alone may exceed the token limits
        ((), LIMITS, None),  # "wait" is fine without force
        ((), BatchLimits(force=True), "returned an empty plan although limits.force is set"),
        ((1, 7), LIMITS, "chose entry ids [7] that are not in the queue"),
        ((7, 1, 8), LIMITS, "chose entry ids [7, 8] that are not in the queue"),
        ((1, 1), LIMITS, "chose an entry more than once: [1, 1]"),
        ((1, 2, 3), BatchLimits(max_batch_size=2), "chose 3 entries; max_batch_size is 2"),
        ((1, 3), LIMITS, "chose 905 new tokens; max_batch_tokens is 100"),
        (
            (1, 2),
            BatchLimits(max_context_tokens=150),
            "chose 158 context tokens; max_context_tokens is 150",
        ),
        ((1, 2), BatchLimits(max_batch_tokens=8), None),  # the limits are inclusive
        ((1, 2), BatchLimits(max_context_tokens=158), None),
    ],
)
def test_batch_plan_clauses(ids: tuple[int, ...], limits: BatchLimits, problem: str | None) -> None:
    assert batch_plan_problem(BatchPlan(ids), QUEUE, limits) == problem


def test_check_batch_plan_names_the_policy() -> None:
    class Greedy:
        pass

    assert check_batch_plan(Greedy(), BatchPlan((2, 1)), QUEUE, LIMITS) == (2, 1)
    with pytest.raises(PolicyContractError) as info:
        check_batch_plan(Greedy(), BatchPlan((9,)), QUEUE, LIMITS)
    assert str(info.value) == "batching policy Greedy chose entry ids [9] that are not in the queue"


def test_window_and_route_contracts() -> None:
    policy = object()
    ok = WindowDecision(3, True)
    assert check_window(policy, ok) is ok
    converted = check_window(policy, WindowDecision(np.int64(3), np.bool_(False)))  # type: ignore[arg-type]
    assert converted == WindowDecision(3) and type(converted.gamma) is int
    bad_answers = (3, None, WindowDecision(0), WindowDecision(-2), WindowDecision(2.5))  # type: ignore[arg-type]
    for bad in (*bad_answers, WindowDecision(True), WindowDecision(2, 1)):  # type: ignore[arg-type]
        with pytest.raises(PolicyContractError) as info:
            check_window(policy, bad)
        assert str(info.value) == (
            f"window policy object returned {bad!r}; "
            "expected WindowDecision(gamma=<integer >= 1>, fused=<bool>)"
        )
    loads = [ServerLoad(4, 0, 0), ServerLoad(7, 1, 1)]
    converted_id = check_route(policy, np.int64(7), loads)
    assert converted_id == 7 and type(converted_id) is int
    with pytest.raises(PolicyContractError) as info:
        check_route(policy, 5, loads)
    assert str(info.value) == "routing policy object returned server 5; expected one of [4, 7]"


@pytest.mark.parametrize("view", [False, True])
def test_a_bool_is_not_a_server_id(view: bool) -> None:
    shown = [ServerLoad(0, 0, 0), ServerLoad(1, 0, 0)]
    loads = LoadView(shown) if view else shown
    with pytest.raises(PolicyContractError) as info:
        check_route(object(), True, loads)
    assert str(info.value) == "routing policy object returned server True; expected one of [0, 1]"


def test_a_window_policy_that_raises_is_named_in_one_line() -> None:
    """Its error went up raw: a traceback in the simulator and the drafter, where the
    server's fused rounds and every batching policy already said one line."""

    class Broken:
        def next_window(self, obs: WindowObservation) -> WindowDecision:
            raise ZeroDivisionError("no rounds yet")

    with pytest.raises(PolicyContractError) as info:
        decide_window(Broken(), WindowObservation(previous_gamma=0, recent_acceptance=None))
    assert str(info.value) == "window policy Broken raised ZeroDivisionError('no rounds yet')"


def test_a_routing_policy_that_raises_is_named_in_one_line() -> None:
    class Broken:
        def route(self, loads: object, rng: np.random.Generator) -> int:
            raise KeyError("server 9")

    view = LoadView([ServerLoad(0, 0, 0)])
    with pytest.raises(PolicyContractError) as info:
        decide_route(Broken(), view, np.random.default_rng(0))
    assert str(info.value) == "routing policy Broken raised KeyError('server 9')"
