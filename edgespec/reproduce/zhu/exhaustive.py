"""How far Algorithm 1's DP lands from the optimum on small K (it is a heuristic for the
pipelined objective): per draw, K tasks with I_k ~ U[1, I_max] and O_max outputs on
(LLaMA-1.1B, LLaMA-7B), l = 1, the DP's T_inf against the best cut of the length-sorted
tasks (the DP's own search space) and the best ordered set partition (any grouping, any
order)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from edgespec.policies.pipeline.batching import dp_batches
from edgespec.policies.pipeline.exhaustive import best_batches
from edgespec.policies.pipeline.latency import PipelineTask
from edgespec.reproduce.zhu.setup import SWEEP_PAIR, ZhuSetup


@dataclass(frozen=True, slots=True)
class GapJob:
    """One draw: (DP / best sorted cut − 1, DP / best ordered partition − 1)."""

    setup: ZhuSetup
    num_users: int
    draw: int

    def __call__(self) -> tuple[float, float]:
        s = self.setup
        rng = np.random.default_rng([s.seed, 1000 + self.draw])
        inputs = rng.integers(1, s.max_input_len + 1, self.num_users)
        tasks = [PipelineTask(int(i), s.max_output_len) for i in inputs]
        costs = s.costs(SWEEP_PAIR)
        _, dp = dp_batches(costs, tasks, 1, output_len=s.max_output_len)
        _, cut = best_batches(costs, tasks, 1, output_len=s.max_output_len, sorted_only=True)
        _, any_order = best_batches(costs, tasks, 1, output_len=s.max_output_len)
        return dp / cut - 1.0, dp / any_order - 1.0


def gap_summary(gaps: Sequence[tuple[float, float]], num_users: int) -> list[str]:
    """REPORT.md lines for the gaps."""
    cut = np.array([g[0] for g in gaps])
    any_order = np.array([g[1] for g in gaps])
    return [
        "## Algorithm 1 against exhaustive search",
        "",
        f"{len(gaps)} draws of K = {num_users} tasks, (LLaMA-1.1B, LLaMA-7B), l = 1, "
        "every task O_max outputs (the DP's assumption):",
        "",
        "| optimum over | DP above it, mean | max | draws where the DP is optimal |",
        "|---|---|---|---|",
        f"| cuts of the length-sorted tasks (the DP's search space) | {cut.mean():.2%} | "
        f"{cut.max():.2%} | {int((cut < 1e-9).sum())} of {len(cut)} |",
        f"| every ordered set partition | {any_order.mean():.2%} | {any_order.max():.2%} | "
        f"{int((any_order < 1e-9).sum())} of {len(any_order)} |",
        "",
    ]
