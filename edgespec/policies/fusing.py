"""Whether a run's rounds may go fused, from the mode and the window policy: its spec
(:func:`spec_fusing`, before the policy is built) or the policy object itself
(:func:`fusing`, for a policy a caller brings)."""

from __future__ import annotations

from edgespec.config import PolicySpec
from edgespec.policies.awc import AwcWindow
from edgespec.policies.registry import window_fuses
from edgespec.policies.window import DynamicWindow, StaticWindow


def fusing(window: object, mode: str) -> bool | None:
    """Whether a round of this run may go fused: ``mode: fused`` always, ``centralized``
    never; in ``distributed`` mode a policy's class attribute ``may_fuse`` (a bool) says,
    else its known type (StaticWindow: its ``fused``; DynamicWindow: no; AwcWindow: yes),
    else ``None``: unknown."""
    if mode != "distributed":
        return mode == "fused"
    declared = getattr(window, "may_fuse", None)
    if isinstance(declared, bool):
        return declared
    if type(window) is StaticWindow:
        return window.fused
    if type(window) is DynamicWindow:
        return False
    if isinstance(window, AwcWindow):
        return True
    return None


def spec_fusing(window: PolicySpec, mode: str) -> bool | None:
    """:func:`fusing` of the window policy ``window`` names, from its spec through the
    registry (:func:`edgespec.policies.registry.window_fuses`)."""
    if mode != "distributed":
        return mode == "fused"
    return window_fuses(window)
