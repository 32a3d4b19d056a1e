"""Zhu Eqs. 7–10, 13–14, 17–19 against hand computations."""

from __future__ import annotations

import pytest

from edgespec.policies.drafting_server.costs import ModelDims, PipelineCosts, StageCoefficients
from tests.policies.drafting_server.helpers import paper_costs

SMALL = ModelDims("small", 1, 2, 3)


def small_costs(acceptance: float) -> PipelineCosts:
    return PipelineCosts(
        SMALL, SMALL, StageCoefficients(1.0, 0.5), StageCoefficients(2.0, 0.25), 1e9, acceptance
    )


def test_tokens_per_step_is_eq_7() -> None:
    costs = small_costs(0.5)
    assert costs.tokens_per_step(2) == pytest.approx(1.75)  # (1 − 0.5³) / 0.5
    assert small_costs(1.0).tokens_per_step(4) == 5.0
    assert small_costs(0.0).tokens_per_step(4) == 1.0
    assert costs.num_steps(7, 2) == 4  # ⌈7 / 1.75⌉
    assert costs.num_steps(8, 2) == 5


def test_step_times_follow_eqs_13_and_14() -> None:
    # J = 1, h1 = 2, h2 = 3, I = 4, l = 2, α = 0.5 → L = 1.75. Per task, 4·J·h1·new·(2·h1 +
    # cached + new + h2) = 8·new·(7 + cached + new).
    times = small_costs(0.5).step_times(4, 2, 2)
    # n = 1: prefill 8·4·(7 + 0 + 4) = 352, then one token over 4 cached: 8·12 = 96.
    # n = 2: I^kv = 4 + 1.75 − 1 = 4.75, then 5.75: 8·12.75 + 8·13.75 = 212.
    assert times.draft_per_task_s.tolist() == pytest.approx([448.0, 212.0])
    assert times.draft_fixed_s == 1.0  # l · c2
    # Verify n = 1: 6 new, nothing cached: 8·6·13 = 624, ×c1 = 2; n = 2: 3 new over 4.75.
    assert times.verify_per_task_s.tolist() == pytest.approx([2 * 624.0, 2 * 24 * 14.75])
    draft, verify = times.batch(3, 2)
    assert draft.tolist() == pytest.approx([3 * 448 + 1.0, 3 * 212 + 1.0])
    assert verify.tolist() == pytest.approx([3 * 1248 + 0.25, 3 * 708 + 0.25])


def test_memory_limit_is_eqs_9_and_10() -> None:
    costs = paper_costs()
    # TinyLlama Eq. 9: 22·(8·2048² + 4·2048·5632) bytes; Eq. 10: 4·22·2048 bytes per token.
    params = 22 * (8 * 2048**2 + 4 * 2048 * 5632)
    assert costs.draft.param_bytes == params
    per_task = 4 * 22 * 2048 * (512 + 2048)
    assert costs.max_batch(512, 2048) == (16e9 - params) // per_task == 30


def test_paper_verification_point_of_fig_5() -> None:
    # Table II c^v: 1.31 TFLOPs per task at batch 48 → c1·F·b + c2 ≈ 1.32 s.
    stage = paper_costs().verify_stage
    assert stage.c1_s_per_flop * 1.31e12 * 48 + stage.c2_s == pytest.approx(1.3207, abs=1e-3)


def test_bad_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match="acceptance rate must be in"):
        small_costs(1.5)
    with pytest.raises(ValueError, match="does not hold the draft model's weights"):
        PipelineCosts(SMALL, SMALL, StageCoefficients(0, 0), StageCoefficients(0, 0), 10, 0.5)
    with pytest.raises(ValueError, match="speculation length must be >= 1"):
        small_costs(0.5).tokens_per_step(0)
    with pytest.raises(ValueError, match="layers, hidden and ffn"):
        ModelDims("broken", 0, 1, 1)
