"""The window of the inbound handler sets' rounds after a session's first
(:mod:`edgespec.sim.fast.batch_end`): the policy asked with the observation at the
delivery, and a fused answer refused, as these sets run distributed rounds only."""

from __future__ import annotations

from collections.abc import Callable

from edgespec.policies.contracts import PolicyContractError, decide_window
from edgespec.policies.inputs import UNOBSERVED
from edgespec.policies.interfaces import WindowDecision, WindowPolicy
from edgespec.sim.model.entities import Session

AskWindow = Callable[[Session, int, int, float, float, int], int]
"""(session, accepted, committed, downlink, delivery time, queue depth) -> γ."""


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


def window_asked(window: WindowPolicy) -> AskWindow:
    """The window policy's γ for the round beginning at the delivery, asked with the
    observation there (a history is kept only when the policy observes); a fused answer
    is refused (:func:`distributed_only`)."""

    def ask(s: Session, num_acc: int, total: int, down: float, deliver: float, depth: int) -> int:
        history = s.history
        obs = (
            UNOBSERVED
            if history is None
            else history.record_round(
                s.gamma, s.gamma_eff, num_acc, total, s.round_up_s + down, depth, deliver
            )
        )
        decision = decide_window(window, obs)
        if decision.fused:
            distributed_only(window, decision)
        return decision.gamma

    return ask
