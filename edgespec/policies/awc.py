"""DSD's adaptive window control (AWC, SEED-NOTES §4.1): a WC-DNN predicts γ from five
runtime features, and a stabiliser turns the raw predictions into windows and a mode.

Features (:data:`~edgespec.policies.wc_dnn.AWC_FEATURE_NAMES`, built from a
:class:`~edgespec.policies.interfaces.WindowObservation` by :func:`awc_features`, the same
function the training set is built with): the server queue depth over its capacity (the
max batch size), recent acceptance, the last round's RTT (ms), TPOT so far (ms) and the
previous γ (fused encoded as γ = 1). A missing feature (TPOT before two tokens exist) is
imputed with the training mean.

The WC-DNN (:class:`~edgespec.policies.wc_dnn.WcDnn`, its weights and inputs in
:mod:`edgespec.policies.wc_dnn`) is trained with torch in :mod:`edgespec.learn.awc.train`
and run in numpy.

Stabilisation, in the paper's order, as pure functions over an explicit :class:`AwcState`
(one per draft–target pair): (1) clamp the raw prediction to [1, 12]; (2) EMA across
iterations, s ← α·x + (1 − α)·s with α = 0.4 (the first prediction starts it); (3)
hysteresis: from distributed mode, the smoothed γ must round to ≤ 1 (s < 1.5, the "near 1"
tolerance the paper leaves open) for k = 2 consecutive steps before switching to fused;
fused mode is left as soon as the smoothed γ rounds to ≥ 2 (the paper gives no hysteresis
that way); (4) round half up to an integer in [1, 12]. The stabiliser's fused decision
carries γ = 1 (the label encoding); :class:`AwcWindow` answers it with ``fused_gamma``.
What a fused round is belongs to the host (``fused_rounds``: DSD's ``cloud_only``, one
target token per pass, as the shipped weights are trained; or ``colocated``, where
``fused_gamma`` tokens are drafted by the server's co-located draft).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from edgespec.core.frozen import frozen_builder
from edgespec.policies.interfaces import WindowDecision, WindowObservation
from edgespec.policies.params import MAX_GAMMA, PolicyParamError
from edgespec.policies.wc_dnn import WcDnn, load_wc_dnn

FUSED_GAMMA = 1
"""How fused mode is encoded, as a label and as the previous-γ feature."""


@dataclass(frozen=True, slots=True)
class AwcSettings:
    """The stabiliser's constants (the paper's values by default)."""

    min_gamma: int = 1
    max_gamma: int = 12
    ema_alpha: float = 0.4
    hysteresis_steps: int = 2
    fused_below: float = 1.5
    """"Near γ = 1": a smoothed γ below this rounds to 1."""

    def __post_init__(self) -> None:
        if not 1 <= self.min_gamma <= self.max_gamma:
            raise ValueError("need 1 <= min_gamma <= max_gamma")
        if not 0.0 < self.ema_alpha <= 1.0:
            raise ValueError(f"ema_alpha must be in (0, 1], got {self.ema_alpha}")
        if self.hysteresis_steps < 1:
            raise ValueError(f"hysteresis_steps must be >= 1, got {self.hysteresis_steps}")


MAX_NEAR_ONE_STEPS = 2**31 - 1
"""Where the count of consecutive near-1 steps saturates (a pair state restored from a
client is refused past it, as a window history's counts are)."""


@dataclass(frozen=True, slots=True)
class AwcState:
    """One draft–target pair's stabiliser state."""

    smoothed: float | None = None
    """The EMA of the clamped predictions (``None`` before the first)."""
    near_one_steps: int = 0
    """Consecutive steps whose smoothed γ was near 1."""
    fused: bool = False


_INITIAL_STATE = AwcState()  # a pair not seen yet (frozen: shared)
_awc_state = frozen_builder(AwcState)  # AwcState(...), built per prediction
_decision = frozen_builder(WindowDecision)  # WindowDecision(...), built per prediction


def clamp_prediction(raw: float, settings: AwcSettings) -> float:
    return min(float(settings.max_gamma), max(float(settings.min_gamma), raw))


def ema(previous: float | None, value: float, alpha: float) -> float:
    return value if previous is None else alpha * value + (1.0 - alpha) * previous


def round_gamma(smoothed: float, settings: AwcSettings) -> int:
    """Round half up, into [min_gamma, max_gamma]."""
    return min(settings.max_gamma, max(settings.min_gamma, math.floor(smoothed + 0.5)))


def hysteresis(
    fused: bool, near_one_steps: int, smoothed: float, settings: AwcSettings
) -> tuple[bool, int]:
    """(fused now, consecutive near-1 steps) after a step whose smoothed γ is ``smoothed``."""
    near = smoothed < settings.fused_below
    steps = min(near_one_steps + 1, MAX_NEAR_ONE_STEPS) if near else 0
    if fused:
        return near, steps
    return steps >= settings.hysteresis_steps, steps


def stabilise(
    state: AwcState, raw: float, settings: AwcSettings
) -> tuple[AwcState, WindowDecision]:
    """One iteration: clamp → EMA → hysteresis → round."""
    smoothed = ema(state.smoothed, clamp_prediction(raw, settings), settings.ema_alpha)
    fused, steps = hysteresis(state.fused, state.near_one_steps, smoothed, settings)
    gamma = FUSED_GAMMA if fused else round_gamma(smoothed, settings)
    return _awc_state(smoothed, steps, fused), _decision(gamma, fused)


def awc_feature_row(obs: WindowObservation, queue_capacity: int) -> tuple[float, ...]:
    """The five WC-DNN inputs of ``obs`` as floats (NaN where the observation has none)."""
    return (
        obs.queue_depth / queue_capacity,
        math.nan if obs.recent_acceptance is None else obs.recent_acceptance,
        obs.rtt_s * 1e3,
        math.nan if obs.tpot_s is None else obs.tpot_s * 1e3,
        float(FUSED_GAMMA if obs.previous_fused else obs.previous_gamma),
    )


def awc_features(obs: WindowObservation, queue_capacity: int) -> npt.NDArray[np.float64]:
    """:func:`awc_feature_row` as an array (the training set's rows)."""
    return np.array(awc_feature_row(obs, queue_capacity), dtype=np.float64)


class AwcWindow:
    """AWC as a window policy: WC-DNN prediction, then :func:`stabilise` with the state of
    the observation's draft–target pair (``obs.pair``: one stabiliser state per pair, as
    DSD keeps it; a host names its pairs, see
    :class:`~edgespec.policies.interfaces.WindowObservation`). A fused decision carries
    ``fused_gamma`` (the window of a colocated fused round; a cloud-only one drafts
    nothing). Before a
    session's first verdict (no acceptance yet) the pair's current decision is repeated
    (``initial_gamma`` for a new pair), without a prediction.
    """

    __slots__ = (
        "_fused",
        "_states",
        "fused_gamma",
        "initial_gamma",
        "model",
        "queue_capacity",
        "settings",
    )

    def __init__(
        self,
        model: WcDnn,
        settings: AwcSettings | None = None,
        queue_capacity: int = 32,
        initial_gamma: int = 4,
        fused_gamma: int = 4,
    ) -> None:
        self.model = model
        self.settings = settings or AwcSettings()
        if queue_capacity < 1:
            raise ValueError(f"queue_capacity must be >= 1, got {queue_capacity}")
        low, high = self.settings.min_gamma, self.settings.max_gamma
        if not low <= initial_gamma <= high:
            raise ValueError(f"initial_gamma must be in [{low}, {high}], got {initial_gamma}")
        if fused_gamma < 1:
            raise ValueError(f"fused_gamma must be >= 1, got {fused_gamma}")
        self.queue_capacity = queue_capacity
        self.initial_gamma = initial_gamma
        self.fused_gamma = fused_gamma
        self._fused = WindowDecision(fused_gamma, True)  # every fused decision
        self._states: dict[str, AwcState] = {}

    def state(self, pair: str = "") -> AwcState:
        """The stabiliser state of ``pair`` (the initial state for a pair not seen yet)."""
        return self._states.get(pair, _INITIAL_STATE)

    def pair_state(self, pair: str) -> tuple[float, ...]:
        """``pair``'s stabiliser state as numbers (``PairStateWindow``): ``()`` for the
        initial state, else (smoothed γ, consecutive near-1 steps, 1.0 if fused else 0.0)."""
        state = self._states.get(pair)
        if state is None or state.smoothed is None:
            return ()
        return (state.smoothed, float(state.near_one_steps), 1.0 if state.fused else 0.0)

    def restore_pair_state(self, pair: str, state: tuple[float, ...]) -> None:
        """Set ``pair``'s stabiliser state from :meth:`pair_state`'s numbers."""
        if not state:
            self._states.pop(pair, None)
            return
        self._states[pair] = awc_state_from_numbers(state, self.settings)

    def next_window(self, obs: WindowObservation) -> WindowDecision:
        pair = obs.pair
        state = self.state(pair)
        if obs.recent_acceptance is None:
            if state.smoothed is None:
                return WindowDecision(self.initial_gamma, False)
            if state.fused:
                return self._fused
            return WindowDecision(round_gamma(state.smoothed, self.settings), False)
        raw = self.model.predict_one(awc_feature_row(obs, self.queue_capacity))
        state, decision = stabilise(state, raw, self.settings)
        self._states[pair] = state
        return self._fused if decision.fused else decision


def awc_state_from_numbers(numbers: tuple[float, ...], settings: AwcSettings) -> AwcState:
    """The :class:`AwcState` that :meth:`AwcWindow.pair_state` encoded; ``ValueError``
    naming the problem for anything it cannot have written."""
    if len(numbers) != 3:
        raise ValueError(
            f"AWC pair state needs 3 numbers (smoothed, near_one_steps, fused), got {len(numbers)}"
        )
    smoothed, steps, fused = numbers
    low, high = float(settings.min_gamma), float(settings.max_gamma)
    # the EMA of clamped values stays in [low, high] up to rounding
    if not (math.isfinite(smoothed) and low - 1e-9 <= smoothed <= high + 1e-9):
        raise ValueError(f"AWC pair state: smoothed must be in [{low:g}, {high:g}], got {smoothed}")
    if not (math.isfinite(steps) and 0 <= steps <= MAX_NEAR_ONE_STEPS and steps.is_integer()):
        raise ValueError(
            f"AWC pair state: near_one_steps must be an integer in [0, {MAX_NEAR_ONE_STEPS}], "
            f"got {steps}"
        )
    if fused not in (0.0, 1.0):
        raise ValueError(f"AWC pair state: fused must be 0 or 1, got {fused}")
    return AwcState(smoothed, int(steps), fused == 1.0)


def load_awc_window(
    file: str | None = None,
    queue_capacity: int = 32,
    initial_gamma: int = 4,
    fused_gamma: int = 4,
) -> AwcWindow:
    """Registry factory (kind ``window``, name ``awc``): the weights in ``file`` (the
    bundled ``edgespec/data/awc/wc-dnn.json`` when ``None``). Each parameter is checked
    here, before the weights load, as a :class:`PolicyParamError` naming it (the registry
    has checked its type against this signature): ``queue_capacity`` >= 1,
    ``initial_gamma`` in the stabiliser's [1, 12], ``fused_gamma`` in [1, MAX_GAMMA];
    then ``file`` (missing, unreadable or not WC-DNN weights)."""
    settings = AwcSettings()
    low, high = settings.min_gamma, settings.max_gamma
    if queue_capacity < 1:
        raise PolicyParamError(
            "queue_capacity", f"queue_capacity must be >= 1, got {queue_capacity}"
        )
    if not low <= initial_gamma <= high:
        raise PolicyParamError(
            "initial_gamma", f"initial_gamma must be in [{low}, {high}], got {initial_gamma}"
        )
    if not 1 <= fused_gamma <= MAX_GAMMA:
        raise PolicyParamError(
            "fused_gamma", f"fused_gamma must be in [1, {MAX_GAMMA}], got {fused_gamma}"
        )
    try:
        model = load_wc_dnn(file)
    except ValueError as exc:  # missing, unreadable or not WC-DNN weights
        raise PolicyParamError("file", str(exc)) from exc
    return AwcWindow(model, settings, queue_capacity, initial_gamma, fused_gamma)
