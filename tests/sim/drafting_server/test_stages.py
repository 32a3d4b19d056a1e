"""Stage durations (Eqs. 13, 14, 17–19): the partial-block formulas agree with the full
blocks' vectors from ``PipelineCosts.step_times``."""

from __future__ import annotations

import pytest

from edgespec.sim.drafting_server.stages import INITIAL_STEPS, StageClock
from tests.sim.drafting_server.helpers import paper_costs


@pytest.mark.parametrize("step", [1, 2, 7])
def test_full_blocks_match_the_iteration_sums(step: int) -> None:
    costs, spec_len, input_len, size = paper_costs(), 4, 300, 6
    clock = StageClock(costs, spec_len)
    draft_stage, verify_stage = costs.draft_stage, costs.verify_stage
    iterations = [clock._draft_flops(input_len, step, i) for i in range(1, spec_len + 1)]
    by_sum = size * draft_stage.c1_s_per_flop * sum(iterations) + spec_len * draft_stage.c2_s
    assert clock.draft_s(input_len, step, size, spec_len) == pytest.approx(by_sum, rel=1e-12)
    flops = clock.verify_flops(input_len, step, spec_len)
    by_flops = size * verify_stage.c1_s_per_flop * flops + verify_stage.c2_s
    assert clock.batch_verify_s(input_len, step, size, spec_len) == pytest.approx(
        by_flops, rel=1e-12
    )
    assert clock.pass_s(size * flops) == pytest.approx(by_flops, rel=1e-12)


def test_fewer_passes_and_tokens_cost_less() -> None:
    clock = StageClock(paper_costs(), 5)
    drafts = [clock.draft_s(100, 3, 4, p) for p in range(1, 6)]
    assert drafts == sorted(drafts) and len(set(drafts)) == 5
    verifies = [clock.batch_verify_s(100, 3, 4, n) for n in range(0, 6)]
    assert verifies == sorted(verifies) and len(set(verifies)) == 6
    with pytest.raises(ValueError, match=r"draft passes must be in 1\.\.5"):
        clock.draft_s(100, 3, 4, 0)


def test_the_step_vectors_grow_past_their_first_size() -> None:
    costs = paper_costs()
    clock = StageClock(costs, 2)
    late = 3 * INITIAL_STEPS + 1
    direct = costs.step_times(50, 2, late)
    assert clock.draft_s(50, late, 1, 2) == pytest.approx(
        float(direct.draft_per_task_s[late - 1] + direct.draft_fixed_s), rel=1e-12
    )
