"""How far Algorithm 1's DP lands from the optimum on small K (it is a heuristic for the
pipelined objective): per draw, K tasks with I_k ~ U[1, I_max] on (LLaMA-1.1B, LLaMA-7B),
l = 1, every task producing O tokens (O_max, and a short O where few steps let the
batches' order matter more), the DP's T_inf against the best cut of the length-sorted
tasks (the DP's own search space) and the best ordered set partition (any grouping, any
order)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from edgespec.policies.drafting_server.batching import dp_batches
from edgespec.policies.drafting_server.exhaustive import best_batches
from edgespec.policies.drafting_server.latency import PipelineTask
from edgespec.reproduce.zhu.setup import SWEEP_PAIR, ZhuSetup


@dataclass(frozen=True, slots=True)
class GapJob:
    """One draw: (DP / best sorted cut − 1, DP / best ordered partition − 1)."""

    setup: ZhuSetup
    num_users: int
    output_len: int
    draw: int

    def __call__(self) -> tuple[float, float]:
        s = self.setup
        rng = np.random.default_rng([s.seed, 1000 + self.draw])
        inputs = rng.integers(1, s.max_input_len + 1, self.num_users)
        out = self.output_len
        tasks = [PipelineTask(int(i), out) for i in inputs]
        costs = s.costs(SWEEP_PAIR)
        _, dp = dp_batches(costs, tasks, 1, output_len=out)
        _, cut = best_batches(costs, tasks, 1, output_len=out, sorted_only=True)
        _, any_order = best_batches(costs, tasks, 1, output_len=out)
        return dp / cut - 1.0, dp / any_order - 1.0


SHORT_OUTPUT = 64
"""The short output length of the second comparison."""


def gap_summary(gaps: Mapping[int, Sequence[tuple[float, float]]], num_users: int) -> list[str]:
    """REPORT.md lines for the gaps, by output length."""
    lines = [
        "## Algorithm 1 against exhaustive search",
        "",
        f"Draws of K = {num_users} tasks, (LLaMA-1.1B, LLaMA-7B), l = 1, every task producing "
        "O tokens (the DP's assumption); how far the DP's T_inf is above the optimum:",
        "",
        "| O | optimum over | draws | DP above it, mean | max | draws where the DP is optimal |",
        "|---|---|---|---|---|---|",
    ]
    for out, rows in gaps.items():
        for name, column in (
            ("cuts of the length-sorted tasks (the DP's search space)", 0),
            ("every ordered set partition", 1),
        ):
            gap = np.array([g[column] for g in rows])
            lines.append(
                f"| {out} | {name} | {len(gap)} | {gap.mean():.2%} | {gap.max():.2%} | "
                f"{int((gap < 1e-9).sum())} |"
            )
    return [*lines, ""]
