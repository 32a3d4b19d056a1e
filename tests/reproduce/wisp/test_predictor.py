"""W7/W8 stand-in pieces: the α fit to Table 5 OFF and the predictor scenario."""

from __future__ import annotations

import math

from edgespec.reproduce.wisp.predictor import (
    PredictorPlan,
    fit_alpha,
    fixed_window_acceptance,
    predictor_scenario,
)
from edgespec.sim.setup.scenario import scenario_from_dict


def test_fixed_window_acceptance_by_hand() -> None:
    # K = 2: (α + α²) / 2
    assert math.isclose(fixed_window_acceptance(0.5, 2), 0.375)
    assert fixed_window_acceptance(1.0, 4) == 1.0


def test_alpha_fit_matches_seed_notes() -> None:
    # SEED-NOTES §1.3 [D]: with K = 4, α ≈ 0.584 / 0.682 / 0.720 / 0.762 for Table 5 OFF
    fitted = [round(fit_alpha(f, 4), 3) for f in (0.31, 0.42, 0.47, 0.53)]
    assert fitted == [0.584, 0.682, 0.72, 0.762]
    for fraction in (0.31, 0.53):
        assert math.isclose(fixed_window_acceptance(fit_alpha(fraction, 4), 4), fraction)


def test_predictor_scenario_adds_the_stand_in() -> None:
    from edgespec.reproduce.wisp.predictor import OperatingStandIn

    plan = PredictorPlan.quick()
    off = scenario_from_dict(predictor_scenario(plan.setup, 4, None, alpha=0.6))
    on = scenario_from_dict(predictor_scenario(plan.setup, 4, OperatingStandIn(0.8, 0.4)))
    assert off.stop_predictor is None and off.acceptance.alpha == 0.6
    assert on.stop_predictor is not None
    assert (on.stop_predictor.confusion_tpr, on.stop_predictor.confusion_fpr) == (0.8, 0.4)
    assert on.stop_predictor.overhead_ms == 0.459
