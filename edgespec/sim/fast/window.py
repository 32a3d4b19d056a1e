"""The window of the inbound handler sets' rounds after a session's first
(:mod:`edgespec.sim.fast.batch_end` asks the policy inline, with the observation at the
delivery): a fused answer refused, as these sets run distributed rounds only."""

from __future__ import annotations

from edgespec.policies.contracts import PolicyContractError
from edgespec.policies.interfaces import WindowDecision


def distributed_only(window: object, decision: WindowDecision) -> WindowDecision:
    """``decision`` (checked) unless it is fused: the inbound handler sets run distributed
    rounds only, and run a window policy that may go fused only when its type is unknown
    (:func:`edgespec.policies.fusing.fusing`)."""
    if decision.fused:
        raise PolicyContractError(
            f"window policy {type(window).__name__} answered {decision!r}, but it does not "
            "say it may go fused, so this run takes the simulator's distributed-only "
            "handler set: give the policy a class attribute `may_fuse = True`"
        )
    return decision
