"""W7/W8 stand-in pieces: the α fit to Table 5 OFF, the predictor scenarios and W8's
drafting speed from Table 6."""

from __future__ import annotations

import math

from edgespec.reproduce.wisp.predictor import (
    PredictorPlan,
    fit_alpha,
    fixed_window_acceptance,
    predictor_scenario,
    stopped_round,
)
from edgespec.reproduce.wisp.setup import MIXED, WispSetup, scenario
from edgespec.reproduce.wisp.table6 import table6_speed
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


def test_on_above_off_for_every_point_whose_tpr_exceeds_its_fpr() -> None:
    """What W7's note (predictor_claims.ON_ABOVE_OFF) says makes its direction hold by
    construction: over the grid it names, accepted / sent with the predictor is above the
    fixed window's (TPR = FPR = 1) for every TPR > FPR."""
    for a in range(1, 50):
        alpha = a / 50  # 0.02 … 0.98
        for t in range(1, 21):
            for f in range(20):  # FPR 0 … 0.95
                if f >= t:
                    continue
                for k in range(1, 9):
                    accepted, sent = stopped_round(alpha, k, t / 20, f / 20)
                    off, _ = stopped_round(alpha, k, 1.0, 1.0)
                    assert accepted / sent > off / k, (alpha, t / 20, f / 20, k)


def test_predictor_scenario_adds_the_stand_in_to_wisp_without_predictor() -> None:
    from edgespec.reproduce.wisp.predictor import OperatingStandIn

    plan = PredictorPlan.quick()
    off = scenario_from_dict(predictor_scenario(plan.setup, 4, None, alpha=0.6))
    on = scenario_from_dict(predictor_scenario(plan.setup, 4, OperatingStandIn(0.8, 0.4)))
    assert off.stop_predictor is None and off.acceptance.alpha == 0.6
    assert off.policies.batching.name == "wisp"
    assert on.stop_predictor is not None and on.name == "wisp-wisp-np-qwen3-32b-measured-predictor"
    assert (on.stop_predictor.confusion_tpr, on.stop_predictor.confusion_fpr) == (0.8, 0.4)
    assert on.stop_predictor.overhead_ms == 0.459


def test_wisp_the_system_carries_table_10s_predictor() -> None:
    for name in ("wisp", "wisp-wc"):  # both readings of Algorithm 1
        wisp = scenario_from_dict(scenario(WispSetup(), name, devices=2, slo_mix=MIXED))
        assert wisp.stop_predictor is not None
        point = (wisp.stop_predictor.confusion_tpr, wisp.stop_predictor.confusion_fpr)
        assert point == (0.8011, 0.425) and wisp.stop_predictor.overhead_ms == 0.459
        conserving = wisp.policies.batching.params.get("work_conserving", False)
        assert conserving is (name == "wisp-wc")
    for system in ("wisp-np", "fcfs", "sled", "centralized"):
        data = scenario(WispSetup(), system, devices=2, slo_mix=MIXED)
        assert scenario_from_dict(data).stop_predictor is None, system


def test_table_6_drafting_speed_by_hand() -> None:
    speed = table6_speed(WispSetup())
    # E[C] = 1 + Σ_{j=1..4} 0.6819^j = 2.6802; 7.115 tok/s per device → 376.7 ms a round;
    # Eq. 19 at 600 cached + 4 new: 4a + 2416 b_c + 600 b_r + c = 17.848 ms; (376.7 − 20 −
    # 17.848) / 4 = 84.71 ms a pass = 11.80 tok/s
    assert round(speed.committed_per_round, 4) == 2.6802
    assert round(1e3 * speed.verify_s, 3) == 17.848
    assert round(1e3 * speed.round_s, 1) == 376.7
    assert round(1e3 * speed.draft_pass_s, 2) == 84.71
    assert round(speed.tokens_per_s, 2) == 11.80
    assert round(speed.at_fig1_speed(), 2) == 3.20
    assert speed.profile()["c_s"] == speed.draft_pass_s
    # a sensitivity, not W8's input: every claim drafts at Fig. 1's 50 tok/s
    assert speed.line().startswith(
        "**W8 drafting speed** (chosen: Fig. 1's 50 tok/s, as for every claim): the speed "
        "Table 6's OFF goodput at N = 2 implies is 11.80 tok/s per device (84.7 ms per draft "
        "pass)"
    )


def test_the_study_trains_in_one_torch_thread_whoever_calls_it() -> None:
    import torch

    from edgespec.reproduce.wisp.predictor import one_torch_thread

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with one_torch_thread():
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 2  # the caller's count is back
    finally:
        torch.set_num_threads(before)
