"""Exhaustive search over batchings for small K: how far the DP of Algorithm 1 (a
heuristic for the pipelined objective) lands from the optimum.

Two optima: over every ordered set partition of the tasks (any grouping, any processing
order; the Fubini number of candidates, 4,683 at K = 6) and over the DP's own search
space (consecutive runs of the length-sorted tasks, processed in that order; 2^(K−1)
candidates). Both evaluate Eqs. 20–22 with every task producing ``output_len`` tokens,
the DP's assumption.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from itertools import combinations, pairwise, permutations

from edgespec.policies.drafting_server.batching import length_order
from edgespec.policies.drafting_server.costs import PipelineCosts
from edgespec.policies.drafting_server.latency import Batches, PipelineTask, inference_latency_s

MAX_TASKS = 7


def set_partitions(items: Sequence[int]) -> Iterator[list[list[int]]]:
    """Every partition of ``items`` into non-empty blocks (each once, blocks unordered)."""
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for partition in set_partitions(rest):
        yield [[first], *partition]
        for b in range(len(partition)):
            yield [*partition[:b], [first, *partition[b]], *partition[b + 1 :]]


def ordered_partitions(num_tasks: int) -> Iterator[Batches]:
    """Every ordered set partition of tasks 0..K−1."""
    for partition in set_partitions(list(range(num_tasks))):
        for order in permutations(partition):
            yield tuple(tuple(block) for block in order)


def sorted_compositions(order: Sequence[int]) -> Iterator[Batches]:
    """Every cut of ``order`` into consecutive runs, kept in that order."""
    k = len(order)
    for num_cuts in range(k):
        for cuts in combinations(range(1, k), num_cuts):
            bounds = (0, *cuts, k)
            yield tuple(tuple(order[a:b]) for a, b in pairwise(bounds))


def best_batches(
    costs: PipelineCosts,
    tasks: Sequence[PipelineTask],
    spec_len: int,
    *,
    output_len: int,
    sorted_only: bool = False,
    pipelined: bool = True,
) -> tuple[Batches, float]:
    """The batching with the least T_inf (pipelined or not), and that T_inf
    (memory-feasible batches only)."""
    if len(tasks) > MAX_TASKS:
        raise ValueError(f"exhaustive search is for K <= {MAX_TASKS} tasks, got {len(tasks)}")
    assumed = [replace(t, output_len=output_len) for t in tasks]
    candidates = (
        sorted_compositions(length_order(assumed))
        if sorted_only
        else ordered_partitions(len(assumed))
    )
    best: tuple[Batches, float] | None = None
    for batches in candidates:
        if not all(_fits(costs, assumed, batch, output_len) for batch in batches):
            continue
        latency = inference_latency_s(costs, assumed, batches, spec_len, pipelined=pipelined)
        if best is None or latency < best[1]:
            best = (batches, latency)
    if best is None:
        raise ValueError("no batching fits the SBS memory")
    return best


def _fits(
    costs: PipelineCosts, tasks: Sequence[PipelineTask], batch: Sequence[int], output_len: int
) -> bool:
    padded = max(tasks[k].input_len for k in batch)
    return len(batch) <= costs.max_batch(padded, output_len)
