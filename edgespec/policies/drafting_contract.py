"""The drafting planner's contract (:class:`edgespec.policies.interfaces.DraftingPlanner`),
checked by both hosts before they act on a plan: the simulator's engine
(:func:`edgespec.sim.drafting_server.engine.simulate_pipeline`) and the runtime's drafting
server (:func:`edgespec.runtime.edge.drafting_server.run_drafting_server`), and the shared
planning call (:func:`edgespec.hardware.drafting_plan.build_plan`), which names the planner.

A plan for K tasks is a :class:`PipelinePlan` whose batches hold each task exactly once
(constraint 24c, no batch empty), whose ``spec_len`` is an integer in 1..\
:data:`~edgespec.policies.params.MAX_GAMMA`, and whose ``shares`` are K finite numbers
≥ 0 summing to 1 (within :data:`SHARE_SUM_TOLERANCE`). A violation is a
:class:`~edgespec.policies.contracts.PolicyContractError`: one line on the command line,
exit status 1 (:func:`edgespec.cli.main`).
"""

from __future__ import annotations

import math
from dataclasses import replace
from numbers import Integral, Real

from edgespec.policies.contracts import PolicyContractError
from edgespec.policies.drafting_server.latency import batches_problem
from edgespec.policies.drafting_server.planner import PipelinePlan
from edgespec.policies.params import MAX_GAMMA

SHARE_SUM_TOLERANCE = 1e-6
"""How far the bandwidth shares' sum may be from 1 (rounding)."""


def plan_problem(plan: object, num_tasks: int) -> str | None:
    """What breaks the planner's contract (module docstring) in ``plan`` for ``num_tasks``
    tasks, or ``None``."""
    if not isinstance(plan, PipelinePlan):
        return f"it is a {type(plan).__name__}, not a PipelinePlan"
    if not isinstance(plan.batches, tuple | list):
        return f"batches are {type(plan.batches).__name__}, not a sequence of batches"
    if (problem := batches_problem(num_tasks, plan.batches)) is not None:
        return f"batches must hold each of the {num_tasks} tasks once: {problem}"
    length = plan.spec_len
    if isinstance(length, bool) or not isinstance(length, Integral) or not 1 <= length <= MAX_GAMMA:
        return f"spec_len is {length!r}, not an integer in 1..{MAX_GAMMA}"
    return _shares_problem(plan.shares, num_tasks)


def _shares_problem(shares: object, num_tasks: int) -> str | None:
    if not isinstance(shares, tuple | list) or len(shares) != num_tasks:
        count = len(shares) if isinstance(shares, tuple | list) else type(shares).__name__
        return f"shares must be one per task: got {count} for {num_tasks} tasks"
    for k, share in enumerate(shares):
        if (
            isinstance(share, bool)
            or not isinstance(share, Real)
            or not 0 <= float(share) < math.inf
        ):
            return f"task {k}'s share is {share!r}, not a finite number >= 0"
    total = math.fsum(float(s) for s in shares)
    if abs(total - 1.0) > SHARE_SUM_TOLERANCE:
        return f"shares sum to {total:g}, not 1"
    return None


def check_plan(plan: object, num_tasks: int, planner: str | None = None) -> PipelinePlan:
    """``plan`` (its ``spec_len`` an ``int``) when it keeps the contract for ``num_tasks``
    tasks, else a :class:`PolicyContractError` naming the planner (``planner``: its name,
    when the caller called it)."""
    problem = plan_problem(plan, num_tasks)
    if problem is not None:
        who = f"drafting planner {planner}'s plan" if planner else "drafting plan"
        raise PolicyContractError(f"{who}: {problem}")
    assert isinstance(plan, PipelinePlan)
    if type(plan.spec_len) is not int:
        return replace(plan, spec_len=int(plan.spec_len))
    return plan
