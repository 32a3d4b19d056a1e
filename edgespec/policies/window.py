"""Window policies: how many tokens γ a device drafts next (DSD §3.4, §4)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

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
