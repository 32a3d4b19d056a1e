"""CSI-aware relabelling of the WISV decision head's training labels (seed 003, Stage 2,
Eqs. 28–31 [reconstructed]), numpy only.

Input: episodes. An episode is one prompt's greedy mismatches in output order, each with
its output token position p_j and its base label y_j ∈ {0, 1} (Stage 1: y = 1
"critical", accepting the draft token there changes the task outcome). Output: per
episode and channel state, each mismatch's **rejection** target r_j ∈ [0, 1] — the
probability the head (which outputs a rejection probability, Eq. 24) should learn.

**Direction.** a_j = 1 is a *repair*: reject the draft token and roll back (the target's
token is committed). Accepting the draft token is 1 − a_j. The head's training target
is the repair probability itself, r_j = π(a_j = 1). This is SEED-NOTES Eq. 29 as written:
maximise Σ_j a_j s_j subject to Σ_j a_j ≤ B(κ) and a_j ≤ y_j. The constraint a_j ≤ y_j
is the "one-way relaxation": a non-critical mismatch is always accepted, and a critical
one may be *relaxed* to accepted when the channel's repair budget runs out. The
lowest-importance critical mismatches are accepted first. A worse channel has a
smaller B(κ), so a larger μ(κ), fewer repairs and more accepted mismatches. On a poor
link (costly round trips) the system accepts more. On a good link it repairs every
critical mismatch, and the labels equal the base labels at κ = 1.
(The other reading, "never accept a critical mismatch, a_j ≤ 1 − y_j", could only turn
base accepts into rejections. A relabelled head would then be no more permissive than
a base-label head on any channel. That contradicts Fig. 5, where the head trained
without relabelling is the *less* permissive one under poor channels.)

Constants (the paper gives none of them, SEED-NOTES §3.4 item 6):

* Eq. 28, importance over **token positions**:
  s_j = Σ_{k: y_k = 1} exp(−|p_j − p_k| / λ) with λ = :data:`DECAY_TOKENS` = 8 tokens
  (one γ = 8 draft block). A critical mismatch counts itself (s ≥ 1). Token distance,
  not mismatch count, is used so that "near" means nearby text whatever the draft's
  acceptance rate.
* κ: :attr:`ChannelState.quality <edgespec.policies.semantic.csi.ChannelState.quality>`
  (rate and PER; RTT does not enter it).
* Repair budget, a named form (:data:`BUDGETS`). ``keep-critical`` (the default,
  :data:`DEFAULT_BUDGET`): B = n_c, with n_c the episode's critical mismatches, so no
  critical mismatch is relaxed and the targets are the base labels on every channel
  (:func:`rejection_targets` returns y itself). It was chosen by the paper's own outcome:
  on an answer task "critical" means accepting changes the final answer, so every
  relaxed critical mismatch the head learns is an answer lost, and a drop under one
  point at T = 12 on the poor channel leaves no room for relaxing any (docs/LEARN.md,
  *WISV decision head*, gives the measurements). ``kappa-critical``: B(κ) = κ · n_c, the
  former default, kept by name. This is a real number: a fractional repair is a
  Bernoulli repair in expectation. B = 0 at κ = 0 (accept everything); B = n_c at κ = 1.
* Eqs. 30–31, the entropy-regularised problem: maximise
  Σ_j π_j s_j + T Σ_j H(π_j) subject to Σ_j π_j ≤ B(κ), 0 ≤ π_j ≤ y_j. Its KKT
  solution is π_j = y_j σ((s_j − μ) / T). μ ≥ 0 is the budget's multiplier. It is 0
  when Σ_{y=1} σ(s_j / T) ≤ B, and otherwise it is the root of
  Σ_{y=1} σ((s_j − μ) / T) = B, found by bisection to 1e-12. As T → 0 this is Eq. 30's
  threshold rule a_j = 1[s_j > μ]. T = :data:`TEMPERATURE` = 0.2 importance units: a
  critical neighbour 8 tokens away (e⁻¹ ≈ 0.37) moves σ by about two temperatures.
  Hard labels, where needed (metrics), are r_j ≥ 0.5.
* CSI draws (:func:`sample_channel`): uplink rate log-uniform in 5–1000 Mbit/s, PER
  uniform in 0–0.05, RTT uniform in 5–100 ms.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from edgespec.policies.semantic.csi import ChannelState

FloatArray = npt.NDArray[np.float64]

DECAY_TOKENS = 8.0
"""λ of Eq. 28, output tokens."""
TEMPERATURE = 0.2
"""T of Eq. 31, importance units."""
RATE_RANGE_BPS = (5e6, 1000e6)
"""Uplink rate of a CSI draw: log-uniform in this range."""
PER_RANGE = (0.0, 0.05)
RTT_RANGE_S = (0.005, 0.100)
_BISECTION_TOL = 1e-12


@dataclass(frozen=True, slots=True)
class Episode:
    """One prompt's mismatches in output order: token positions and base labels."""

    positions: tuple[int, ...]
    critical: tuple[int, ...]

    def __post_init__(self) -> None:
        if len(self.positions) != len(self.critical):
            raise ValueError(
                f"{len(self.positions)} positions but {len(self.critical)} base labels"
            )
        if any(y not in (0, 1) for y in self.critical):
            raise ValueError("base labels must be 0 or 1")
        if any(b <= a for a, b in itertools.pairwise(self.positions)):
            raise ValueError("mismatch positions must be strictly increasing")

    @property
    def num_critical(self) -> int:
        return sum(self.critical)


def importance(episode: Episode, decay: float = DECAY_TOKENS) -> FloatArray:
    """Eq. 28: s_j = Σ_{k critical} exp(−|p_j − p_k| / λ) for every mismatch j."""
    if decay <= 0:
        raise ValueError(f"decay must be > 0, got {decay}")
    p = np.asarray(episode.positions, dtype=np.float64)
    y = np.asarray(episode.critical, dtype=np.float64)
    if p.size == 0:
        return np.zeros(0)
    weights = np.exp(-np.abs(p[:, None] - p[None, :]) / decay)
    result: FloatArray = weights @ y
    return result


def repair_budget(quality: float, num_critical: int) -> float:
    """B(κ) = κ · n_c, the ``kappa-critical`` form (module docstring)."""
    if not 0.0 <= quality <= 1.0:
        raise ValueError(f"channel quality must be in [0, 1], got {quality}")
    return quality * num_critical


def keep_critical_budget(quality: float, num_critical: int) -> float:
    """B = n_c on every channel, the ``keep-critical`` form (module docstring)."""
    if not 0.0 <= quality <= 1.0:
        raise ValueError(f"channel quality must be in [0, 1], got {quality}")
    return float(num_critical)


BUDGETS: dict[str, Callable[[float, int], float]] = {
    "keep-critical": keep_critical_budget,
    "kappa-critical": repair_budget,
}
"""The repair budget's named forms B(κ, n_c) (module docstring)."""
DEFAULT_BUDGET = "keep-critical"


def _sigmoid(z: FloatArray) -> FloatArray:
    out: FloatArray = 0.5 * (1.0 + np.tanh(0.5 * z))  # stable for any z
    return out


def repair_threshold(
    critical_importance: Sequence[float] | FloatArray,
    budget: float,
    temperature: float = TEMPERATURE,
) -> float:
    """μ(κ) of Eq. 31: the smallest μ ≥ 0 with Σ σ((s_j − μ)/T) ≤ budget over the critical
    mismatches' importances; ``inf`` for a budget of 0 with critical mismatches (repair
    none)."""
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    if budget < 0:
        raise ValueError(f"budget must be >= 0, got {budget}")
    s = np.asarray(critical_importance, dtype=np.float64)
    if s.size == 0:
        return 0.0
    if budget <= 0:
        return math.inf

    def used(mu: float) -> float:
        return float(_sigmoid((s - mu) / temperature).sum())

    if used(0.0) <= budget:
        return 0.0
    low, high = 0.0, float(s.max())
    while used(high) > budget:  # σ(0)·n > B: step past the largest importance
        high += max(1.0, high)
    while high - low > _BISECTION_TOL * max(1.0, high):
        mid = 0.5 * (low + high)
        if used(mid) > budget:
            low = mid
        else:
            high = mid
    return high


def repair_probabilities(
    episode: Episode,
    quality: float,
    decay: float = DECAY_TOKENS,
    temperature: float = TEMPERATURE,
    budget: str = "kappa-critical",
) -> FloatArray:
    """Eq. 31: r_j = π(a_j = 1) = y_j σ((s_j − μ(κ))/T), the head's rejection target for
    every mismatch of ``episode`` on a channel of quality κ = ``quality``, under the
    named ``budget`` form (:data:`BUDGETS`)."""
    y = np.asarray(episode.critical, dtype=np.float64)
    if y.size == 0 or episode.num_critical == 0:
        return np.zeros(y.size)
    s = importance(episode, decay)
    limit = BUDGETS[budget](quality, episode.num_critical)
    mu = repair_threshold(s[y == 1], limit, temperature)
    if math.isinf(mu):
        return np.zeros(y.size)
    result: FloatArray = y * _sigmoid((s - mu) / temperature)
    return result


def rejection_targets(episode: Episode, quality: float, budget: str) -> FloatArray:
    """The head's rejection targets for ``episode`` on a channel of quality κ under the
    named ``budget`` (:data:`BUDGETS`): the base labels where the budget covers every
    critical mismatch, else Eq. 31's :func:`repair_probabilities` with that budget."""
    if budget not in BUDGETS:
        raise ValueError(f"unknown budget {budget!r}: known are {', '.join(BUDGETS)}")
    y = np.asarray(episode.critical, dtype=np.float64)
    if BUDGETS[budget](quality, episode.num_critical) >= episode.num_critical:
        return y
    return repair_probabilities(episode, quality, budget=budget)


def hard_repairs(probabilities: FloatArray) -> npt.NDArray[np.int64]:
    """Hard labels (reject = 1) from Eq. 31's probabilities: r ≥ 0.5."""
    return (np.asarray(probabilities) >= 0.5).astype(np.int64)


def sample_channel(rng: np.random.Generator) -> ChannelState:
    """One CSI draw: rate log-uniform 5–1000 Mbit/s, PER U(0, 0.05), RTT U(5, 100) ms."""
    low, high = (math.log(r) for r in RATE_RANGE_BPS)
    rate = math.exp(float(rng.uniform(low, high)))
    per = float(rng.uniform(*PER_RANGE))
    rtt = float(rng.uniform(*RTT_RANGE_S))
    return ChannelState(uplink_bps=rate, per=per, rtt_s=rtt)
