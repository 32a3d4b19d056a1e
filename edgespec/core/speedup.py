"""What speculative decoding gains, in closed form (terms, and one position's acceptance
probability α: :mod:`edgespec.core.speculative`): the expected tokens per round and the
speedup over target-only decoding (DSD Eq. 1–2), the best γ, and per-position acceptance of
recorded traces. The verification itself is :mod:`edgespec.core.speculative`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt


def expected_committed_tokens(alpha: float, gamma: int) -> float:
    """E[τ] = (1 − α^(γ+1)) / (1 − α): expected tokens committed per round (DSD Eq. 1).

    Counts the L accepted drafts plus the extra token; equals γ + 1 at α = 1.
    """
    _check_alpha_gamma(alpha, gamma)
    if alpha == 1.0:
        return float(gamma + 1)
    return (1.0 - alpha ** (gamma + 1)) / (1.0 - alpha)


def expected_accepted_length(alpha: float, gamma: int) -> float:
    """E[L] = E[τ] − 1 = α(1 − α^γ)/(1 − α): expected accepted draft tokens per round."""
    return expected_committed_tokens(alpha, gamma) - 1.0


def expected_speedup(alpha: float, gamma: int, cost_ratio: float) -> float:
    """S = (1 − α^(γ+1)) / ((1 − α)(cγ + 1)) (DSD Eq. 2): speedup over target-only decoding
    when one round costs γ draft steps (each c target steps) plus one target step."""
    if cost_ratio < 0:
        raise ValueError(f"cost_ratio must be >= 0, got {cost_ratio}")
    return expected_committed_tokens(alpha, gamma) / (cost_ratio * gamma + 1.0)


def optimal_gamma(alpha: float, cost_ratio: float, max_gamma: int = 16) -> int:
    """The γ in 1..max_gamma that maximizes :func:`expected_speedup`."""
    return max(range(1, max_gamma + 1), key=lambda g: expected_speedup(alpha, g, cost_ratio))


def _check_alpha_gamma(alpha: float, gamma: int) -> None:
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    if gamma < 0:
        raise ValueError(f"gamma must be >= 0, got {gamma}")


# --- per-position acceptance (traces carry a 0/1 acceptance sequence per drafted position)


def accepted_length_from_sequence(acceptance: Sequence[int], gamma: int) -> int:
    """L for a window of ``gamma``: the number of leading 1s among the first γ flags.

    A trace captured at γ_max gives the outcome at any shorter γ: verification stops at
    the first rejection, and the prefix before it does not depend on the window length.
    """
    if gamma > len(acceptance):
        raise ValueError(f"gamma={gamma} exceeds the {len(acceptance)} recorded positions")
    length = 0
    while length < gamma and acceptance[length]:
        length += 1
    return length


def marginal_acceptance_by_position(
    accepted_lengths: Sequence[int], gamma: int
) -> npt.NDArray[np.float64]:
    """P(position i accepted | positions < i accepted), for i = 0..γ-1.

    ``accepted_lengths`` are observed L values of rounds with window γ. Positions never
    reached get NaN.
    """
    lengths = np.asarray(accepted_lengths, dtype=np.int64)
    if lengths.size and (lengths.min() < 0 or lengths.max() > gamma):
        raise ValueError(f"accepted lengths must lie in 0..{gamma}")
    rates = np.full(gamma, np.nan)
    for i in range(gamma):
        reached = int((lengths >= i).sum())
        if reached:
            rates[i] = float((lengths >= i + 1).sum()) / reached
    return rates


def expected_accepted_length_by_position(conditional_rates: Sequence[float]) -> float:
    """E[L] = Σ_k Π_{i<k+1} a_i for conditional per-position acceptance rates a_i."""
    expected, survive = 0.0, 1.0
    for rate in conditional_rates:
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"acceptance rate {rate} outside [0, 1]")
        survive *= rate
        expected += survive
    return expected
