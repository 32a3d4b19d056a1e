"""Algorithm 1's DP (Eqs. 30–32), its gap to exhaustive search, and the baseline rules."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgespec.policies.drafting_server.batching import (
    chunks,
    dp_batches,
    heuristic_batches,
    length_order,
    max_batches,
)
from edgespec.policies.drafting_server.exhaustive import (
    best_batches,
    ordered_partitions,
    sorted_compositions,
)
from edgespec.policies.drafting_server.latency import PipelineTask, inference_latency_s
from tests.policies.drafting_server.helpers import fixed_costs, paper_costs


def inputs(*lens: int, output_len: int = 2) -> list[PipelineTask]:
    return [PipelineTask(i, output_len) for i in lens]


def test_dp_takes_one_batch_when_batch_size_is_free() -> None:
    # c1 = 0: a pass costs the same for any batch, so one batch is best (2 steps of 1 + 1).
    batches, latency = dp_batches(fixed_costs(1.0, 1.0), inputs(5, 3, 9), 1, output_len=2)
    assert batches == ((1, 0, 2),)
    assert latency == 4.0


def test_dp_respects_the_sbs_memory_and_sorts_by_input() -> None:
    # 12 weight bytes + 4 bytes per token; (I + O) = 10 + 2 → 48 bytes a task. 12 + 2·48 =
    # 108 bytes hold two tasks a batch. Sorted by input: 1 (I=3), 0 (5), 3 (7), 2 (9).
    costs = fixed_costs(1.0, 1.0, memory_bytes=108.0 + 8 * 4)
    tasks = [PipelineTask(i, 2) for i in (5, 9, 3, 7)]
    assert costs.max_batch(9, 2) == 2
    batches, latency = dp_batches(costs, tasks, 1, output_len=2)
    assert batches == ((2, 0), (3, 1))
    # Two batches each step: drafts 0–1 and 1–2, verifications 1–2 and 2–3 → 3 s a step.
    assert latency == 6.0 == inference_latency_s(costs, tasks, batches, 1)


def test_a_task_too_big_for_the_sbs_is_refused() -> None:
    with pytest.raises(ValueError, match="does not fit the SBS memory"):
        dp_batches(fixed_costs(1.0, 1.0, memory_bytes=20.0), inputs(9), 1, output_len=2)


def test_dp_is_a_heuristic_for_the_pipeline_found_case() -> None:
    # Table II costs, O = 64, l = 1: the DP keeps one schedule per prefix and misses the
    # best cut of the sorted tasks by 3.0 %, and the best ordered partition by more.
    costs = paper_costs()
    tasks = inputs(32, 144, 256, 249, 60, 503, output_len=64)
    batches, dp = dp_batches(costs, tasks, 1, output_len=64)
    assert dp == pytest.approx(inference_latency_s(costs, tasks, batches, 1))
    _, best_sorted = best_batches(costs, tasks[:6], 1, output_len=64, sorted_only=True)
    assert dp / best_sorted - 1 == pytest.approx(0.0301, abs=5e-4)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(1, 512), min_size=1, max_size=5), st.integers(1, 4))
def test_dp_bounds_and_exactness(lens: list[int], spec_len: int) -> None:
    costs = paper_costs()
    tasks = inputs(*lens, output_len=48)
    batches, dp = dp_batches(costs, tasks, spec_len, output_len=48)
    # What the DP reports is what the recursion gives its batches.
    assert dp == pytest.approx(inference_latency_s(costs, tasks, batches, spec_len))
    _, best_sorted = best_batches(costs, tasks, spec_len, output_len=48, sorted_only=True)
    _, best_any = best_batches(costs, tasks, spec_len, output_len=48)
    assert best_any <= best_sorted * (1 + 1e-12) <= dp * (1 + 1e-12)
    # Without the pipeline the objective adds up over batches: the DP is exact there.
    _, seq = dp_batches(costs, tasks, spec_len, output_len=48, pipelined=False)
    _, seq_best = best_batches(
        costs, tasks, spec_len, output_len=48, sorted_only=True, pipelined=False
    )
    assert seq == pytest.approx(seq_best)


def test_enumerations_count_what_they_should() -> None:
    assert sum(1 for _ in ordered_partitions(3)) == 13  # Fubini number
    assert sum(1 for _ in ordered_partitions(4)) == 75
    assert sorted(sorted_compositions([2, 0, 1])) == sorted(
        [((2, 0, 1),), ((2,), (0, 1)), ((2, 0), (1,)), ((2,), (0,), (1,))]
    )
    with pytest.raises(ValueError, match="K <= 7"):
        best_batches(fixed_costs(1, 1), inputs(*range(1, 9)), 1, output_len=2)


def test_baseline_rules() -> None:
    tasks = inputs(5, 9, 3, 7, 4)
    assert length_order(tasks) == [2, 4, 0, 3, 1]
    assert chunks([2, 4, 0, 3, 1], 2) == ((2, 4), (0, 3), (1,))
    # Max batching in arrival order: 12 + 3·48 = 156 bytes hold three tasks of I ≤ 10.
    costs = fixed_costs(1.0, 1.0, memory_bytes=156.0)
    assert max_batches(costs, inputs(5, 9, 3, 7, 4, output_len=2), 2) == ((0, 1, 2), (3, 4))
    # Heuristic: sizes 2, 3, ... kept while the latency does not grow.
    seen: list[int] = []

    def latency(batches: tuple[tuple[int, ...], ...]) -> float:
        size = len(batches[0])
        seen.append(size)
        return {2: 5.0, 3: 4.0, 4: 4.5, 5: 1.0}[size]

    assert heuristic_batches(tasks, latency, 5) == ((2, 4, 0), (3, 1))
    assert seen == [2, 3, 4]  # stopped when latency degraded; never tried 5
    with pytest.raises(ValueError, match="batch size must be >= 1"):
        chunks([1], 0)
