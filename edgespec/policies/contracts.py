"""Checks of a policy's answer, shared by the simulator and the real server.

A host calls a policy, then passes the answer through the matching ``check_*`` function
here before acting on it. A violation raises :class:`PolicyContractError` whose message
names the policy (its class) and says exactly what was wrong; the simulator stops on it
(``edgespec`` prints the message as one line, exit status 1: :func:`edgespec.cli.main`),
the server fails the calls the answer concerned with ``INTERNAL`` and keeps serving.

Contracts (see :mod:`edgespec.policies.interfaces` for the call order):

- batching: every chosen id is in the queue shown, none twice; at most
  ``limits.max_batch_size`` entries; a plan of two or more entries stays within
  ``max_batch_tokens`` (Σ new tokens) and ``max_context_tokens`` (Σ context tokens) — one
  entry alone may exceed them, or an oversized request would block the queue forever; an
  empty plan ("wait") is allowed only without ``limits.force``.
- window: a :class:`WindowDecision` whose γ is an integer ≥ 1 (the host then caps it to
  the tokens still to generate) and whose ``fused`` is a bool.
- routing: the answer is the ``server_id`` of one of the loads shown.
- decision head (WISV): ``rejects`` answers one bool per mismatch shown, a 1-D bool array
  of exactly that length (:func:`check_head_answer`).
"""

from __future__ import annotations

import reprlib
from collections.abc import Mapping, Sequence
from numbers import Integral

import numpy as np
import numpy.typing as npt

from edgespec.core.types import BatchPlan, PendingVerification, ServerLoad
from edgespec.policies.interfaces import (
    BatchingPolicy,
    BatchLimits,
    RoutingPolicy,
    WindowDecision,
    WindowObservation,
    WindowPolicy,
)
from edgespec.policies.loads import LoadView


class PolicyContractError(RuntimeError):
    """A policy answered outside its contract."""


def policy_name(policy: object) -> str:
    return type(policy).__name__


def batch_plan_problem(
    plan: BatchPlan,
    queue: Sequence[PendingVerification],
    limits: BatchLimits,
    by_id: Mapping[int, PendingVerification] | None = None,
) -> str | None:
    """What is wrong with ``plan`` for ``queue`` under ``limits``, or ``None``.
    ``by_id``: ``queue`` by ``entry_id``, when the host already has it (saves a dict)."""
    ids = plan.entry_ids
    if not ids:
        return "returned an empty plan although limits.force is set" if limits.force else None
    if by_id is None:
        by_id = {e.entry_id: e for e in queue}
    tokens = context = 0  # Σ new and Σ context tokens, in one pass over the plan
    for i in ids:
        entry = by_id.get(i)
        if entry is None:
            unknown = [i for i in ids if i not in by_id]
            return f"chose entry ids {unknown} that are not in the queue"
        tokens += entry.num_new_tokens
        context += entry.num_cached_tokens + entry.num_new_tokens  # num_context_tokens
    size = len(ids)
    if size > 1 and len(set(ids)) != size:
        return f"chose an entry more than once: {list(ids)}"
    if size > limits.max_batch_size:
        return f"chose {size} entries; max_batch_size is {limits.max_batch_size}"
    if size > 1:
        if tokens > limits.max_batch_tokens:
            return f"chose {tokens} new tokens; max_batch_tokens is {limits.max_batch_tokens}"
        if context > limits.max_context_tokens:
            return (
                f"chose {context} context tokens; max_context_tokens is {limits.max_context_tokens}"
            )
    return None


def check_batch_plan(
    policy: object,
    plan: BatchPlan,
    queue: Sequence[PendingVerification],
    limits: BatchLimits,
    by_id: Mapping[int, PendingVerification] | None = None,
) -> tuple[int, ...]:
    """``plan.entry_ids`` when the plan keeps the batching contract, else the error
    (``by_id``: ``queue`` by ``entry_id``, if the host has it)."""
    problem = batch_plan_problem(plan, queue, limits, by_id)
    if problem is not None:
        raise PolicyContractError(f"batching policy {policy_name(policy)} {problem}")
    return plan.entry_ids


def _raised(kind: str, policy: object, exc: Exception) -> PolicyContractError:
    """The error of a ``kind`` policy whose call raised ``exc`` (not a contract error of
    its own, which the hosts pass on as it is)."""
    return PolicyContractError(f"{kind} policy {policy_name(policy)} raised {exc!r}")


def decide_batch(
    policy: BatchingPolicy,
    queue: tuple[PendingVerification, ...],
    now_s: float,
    limits: BatchLimits,
    by_id: Mapping[int, PendingVerification] | None = None,
) -> tuple[int, ...]:
    """``policy``'s batch from ``queue`` (a tuple: a policy cannot change the host's view,
    as a list's ``pop`` did, stalling the server while the simulator ran on), checked by
    :func:`check_batch_plan`; a policy that raises, or answers anything but a
    :class:`BatchPlan`, is a :class:`PolicyContractError` naming it, in every host (the
    simulator printed a traceback where the server said one line)."""
    try:
        plan = policy.select(queue, now_s, limits)
    except PolicyContractError:  # the policy's own (a wrapper's, of its inner policy)
        raise
    except Exception as exc:
        raise _raised("batching", policy, exc) from exc
    if not isinstance(plan, BatchPlan):
        raise PolicyContractError(
            f"batching policy {policy_name(policy)} returned {type(plan).__name__}, not a BatchPlan"
        )
    return check_batch_plan(policy, plan, queue, limits, by_id)


def check_window(policy: object, decision: object) -> WindowDecision:
    """``decision`` when it is a :class:`WindowDecision` with an integer γ ≥ 1 and a bool
    ``fused``, else the error."""
    if type(decision) is WindowDecision:
        gamma = decision.gamma
        if type(gamma) is int and gamma >= 1 and type(decision.fused) is bool:
            return decision  # the common case, without the ABC checks
        if (
            not isinstance(gamma, bool)
            and isinstance(gamma, Integral)
            and gamma >= 1
            and isinstance(decision.fused, (bool, np.bool_))
        ):
            return WindowDecision(int(gamma), bool(decision.fused))
    raise PolicyContractError(
        f"window policy {policy_name(policy)} returned {decision!r}; "
        "expected WindowDecision(gamma=<integer >= 1>, fused=<bool>)"
    )


def decide_window(policy: WindowPolicy, observation: WindowObservation) -> WindowDecision:
    """The window policy's decision for ``observation``, checked (:func:`check_window`):
    the one place where both hosts ask a window policy, so a γ < 1, a non-integer γ or a
    non-bool ``fused`` is refused with the same :class:`PolicyContractError` everywhere,
    as is a policy that raises (a traceback in the simulator and the drafter)."""
    try:
        decision = policy.next_window(observation)
    except PolicyContractError:
        raise
    except Exception as exc:
        raise _raised("window", policy, exc) from exc
    if type(decision) is WindowDecision:  # the common case, checked without a call
        gamma = decision.gamma
        if type(gamma) is int and gamma >= 1 and type(decision.fused) is bool:
            return decision
    return check_window(policy, decision)


def decide_route(policy: RoutingPolicy, loads: LoadView, rng: np.random.Generator) -> int:
    """The routing policy's server for a request over ``loads``, checked
    (:func:`check_route`): both hosts ask here, so a policy that raises is a
    :class:`PolicyContractError` naming it in each (its error went up raw)."""
    try:
        server_id = policy.route(loads, rng)
    except PolicyContractError:
        raise
    except Exception as exc:
        raise _raised("routing", policy, exc) from exc
    return check_route(policy, server_id, loads)


def check_route(policy: object, server_id: object, loads: Sequence[ServerLoad]) -> int:
    """``server_id`` (as an ``int``) when it names one of ``loads``, else the error."""
    if type(server_id) is int and isinstance(loads, LoadView):  # indexed: no scan
        if loads.position(server_id) is not None:
            return server_id
    elif type(server_id) is int:  # the common case, without the ABC check and the list
        for load in loads:
            if load.server_id == server_id:
                return server_id
    known = [load.server_id for load in loads]
    if isinstance(server_id, bool) or not isinstance(server_id, Integral) or server_id not in known:
        raise PolicyContractError(
            f"routing policy {policy_name(policy)} returned server {server_id!r}; "
            f"expected one of {known}"
        )
    return int(server_id)


def check_head_answer(head: object, answer: object, num_mismatches: int) -> npt.NDArray[np.bool_]:
    """``answer``, a decision head's ``rejects`` for ``num_mismatches`` greedy mismatches,
    when it is one bool per mismatch (a 1-D ``numpy`` bool array of exactly that length),
    else the error naming the head, what it returned and what was expected."""
    if (
        isinstance(answer, np.ndarray)
        and answer.dtype == np.bool_
        and answer.shape == (num_mismatches,)
    ):
        return answer
    if isinstance(answer, np.ndarray):
        got = f"a {answer.dtype} array of shape {answer.shape}"
    else:
        got = f"{type(answer).__name__} {reprlib.repr(answer)}"
    mismatches = "mismatch" if num_mismatches == 1 else "mismatches"
    raise PolicyContractError(
        f"decision head {policy_name(head)} returned {got} for {num_mismatches} {mismatches}; "
        f"expected a 1-D bool array of shape ({num_mismatches},), one bool per mismatch"
    )
