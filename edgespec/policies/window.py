"""Window policies: how many tokens γ a device drafts next (DSD §3.4, §4); and
:func:`gamma_bounds`, the largest γ each known policy's decisions may carry (a host checks
them against the longest block its verifier takes before a round is drafted)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from edgespec.policies.awc import AwcWindow
from edgespec.policies.interfaces import WindowDecision, WindowObservation
from edgespec.policies.params import MAX_GAMMA, PolicyParamError


@dataclass(frozen=True, slots=True)
class StaticWindow:
    """Always the same γ, and the same mode: distributed, or every round fused when
    ``fused`` (it reads nothing of the observation: ``observes`` is False, see
    :func:`edgespec.policies.inputs.observes`)."""

    observes: ClassVar[bool] = False
    gamma: int = 4
    fused: bool = False
    decision: WindowDecision = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.gamma < 1:
            raise PolicyParamError("gamma", f"gamma must be >= 1, got {self.gamma}")
        if self.gamma > MAX_GAMMA:
            raise PolicyParamError("gamma", f"gamma must be <= {MAX_GAMMA}, got {self.gamma}")
        object.__setattr__(self, "decision", WindowDecision(self.gamma, self.fused))

    def next_window(self, obs: WindowObservation) -> WindowDecision:
        return self.decision


@dataclass(frozen=True, slots=True)
class DynamicWindow:
    """DSD's threshold rule, always distributed: γ+1 when recent acceptance >
    ``raise_above``, γ−1 when < ``lower_below``, clamped to [min_gamma, max_gamma].
    Starts at ``initial_gamma``."""

    initial_gamma: int = 4
    min_gamma: int = 1
    max_gamma: int = 8
    raise_above: float = 0.75
    lower_below: float = 0.25
    _decisions: tuple[WindowDecision, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        low, start, high = self.min_gamma, self.initial_gamma, self.max_gamma
        if not 1 <= low <= start <= high <= MAX_GAMMA:
            raise PolicyParamError(
                _misplaced_gamma(low, high),
                f"need 1 <= min_gamma <= initial_gamma <= max_gamma <= {MAX_GAMMA}, got "
                f"{low}, {start}, {high}",
            )
        lower, upper = self.lower_below, self.raise_above
        if not 0.0 <= lower <= upper <= 1.0:
            raise PolicyParamError(
                "raise_above" if not 0.0 <= upper <= 1.0 else "lower_below",
                f"need 0 <= lower_below <= raise_above <= 1, got {lower}, {upper}",
            )
        decisions = tuple(WindowDecision(g) for g in range(self.max_gamma + 1))
        object.__setattr__(self, "_decisions", decisions)  # one object per γ, built once

    def next_window(self, obs: WindowObservation) -> WindowDecision:
        if obs.recent_acceptance is None:
            return self._decisions[self.initial_gamma]
        gamma = obs.previous_gamma
        if obs.recent_acceptance > self.raise_above:
            gamma += 1
        elif obs.recent_acceptance < self.lower_below:
            gamma -= 1
        return self._decisions[max(self.min_gamma, min(self.max_gamma, gamma))]


def _misplaced_gamma(low: int, high: int) -> str:
    """Which of DynamicWindow's γ parameters breaks 1 <= min <= initial <= max <= MAX_GAMMA
    (each bound out of [1, MAX_GAMMA] first, ``initial_gamma`` when the bounds themselves
    are in order)."""
    if not 1 <= low <= MAX_GAMMA:
        return "min_gamma"
    return "max_gamma" if not low <= high <= MAX_GAMMA else "initial_gamma"


@dataclass(frozen=True, slots=True)
class GammaBound:
    """The largest γ a window policy's decisions of one kind (``fused`` or distributed)
    may carry, and the parameter that sets it (``settable``: among the policy's params; an
    AWC window's ``max_gamma`` is its stabiliser's, fixed)."""

    param: str
    gamma: int
    fused: bool
    settable: bool = True


def gamma_bounds(window: object) -> tuple[GammaBound, ...] | None:
    """The largest γ of each kind of decision ``window`` makes: a :class:`StaticWindow`'s
    ``gamma`` (fused when it is), a :class:`DynamicWindow`'s ``max_gamma`` (distributed),
    an :class:`~edgespec.policies.awc.AwcWindow`'s stabiliser ``max_gamma`` (distributed)
    and ``fused_gamma`` (fused); ``None`` for a policy of another type (unknown)."""
    if type(window) is StaticWindow:
        return (GammaBound("gamma", window.gamma, window.fused),)
    if type(window) is DynamicWindow:
        return (GammaBound("max_gamma", window.max_gamma, False),)
    if isinstance(window, AwcWindow):
        return (GammaBound("max_gamma", window.settings.max_gamma, False, settable=False),
                GammaBound("fused_gamma", window.fused_gamma, True))  # fmt: skip
    return None
