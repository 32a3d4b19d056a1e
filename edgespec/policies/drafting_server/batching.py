"""Batchings for the pipeline (Zhu et al., seed 001, §III-C): the dynamic program of
Algorithm 1 and the paper's baselines.

**DP (Algorithm 1, as Eqs. 30–32 define it).** Tasks sorted by input length ascending
(ties by index); every task is assumed to produce O tokens (the paper's O_max, so all
batches run N = ⌈O/L⌉ steps). For each prefix 1..i the DP keeps ONE pair of per-step
vectors: Υ[i,n,0], when the SBS finished drafting the prefix's last batch at step n, and
Υ[i,n,1], when the MBS finished verifying it. The prefix's last batch j..i (padded to
I_i) is the j minimising Σ_n (max{Υ[j−1,n,0] + T^d_n, Υ[j−1,n,1]} + T^v_n), the
prefix's T_inf; then Υ[i,n,0] = Υ[j*−1,n,0] + T^d_n (Eq. 31) and
Υ[i,n,1] = max{Υ[i,n,0], Υ[j*−1,n,1]} + T^v_n (Eq. 32). The reading of the printed
algorithm's slips (SEED-NOTES §2.5, 1–2): T^d is added to the draft term, as Eqs. 20,
31 and 32 imply (Eq. 29 and line 15 print it on the verification term); S[i] = j* is
recorded for every i, j* = 1 included; ties go to the smallest j; backtracking jumps
i ← S[i] − 1. Batches over the SBS memory limit (Eqs. 9–10) are skipped. Keeping one
vector pair per prefix makes it a heuristic: it is exact for the sequential (no
pipeline) objective, whose total is additive over batches, but not for the pipeline's
(:mod:`edgespec.policies.drafting_server.exhaustive` measures the gap). O(K²·N).

**Baselines.** Max batching [11]: tasks in arrival order, each batch filled as far as the
SBS memory allows. Static batching [9]: fixed-size batches in arrival order. Heuristic
batching [34] (ADS's rule, "begins with two batches, progressively increases the batch
size while computing latency, and selects the optimal batch configuration when latency
starts to degrade"): length-sorted tasks cut into equal batches of b = 2, 3, … tasks,
stopping at the first b whose latency is worse than the best so far. No batching: one
task per batch, in length order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from edgespec.policies.drafting_server.costs import PipelineCosts
from edgespec.policies.drafting_server.latency import Batches, PipelineTask


def length_order(tasks: Sequence[PipelineTask]) -> list[int]:
    """Task indices by input length ascending, ties by index."""
    return sorted(range(len(tasks)), key=lambda k: (tasks[k].input_len, k))


def dp_batches(
    costs: PipelineCosts,
    tasks: Sequence[PipelineTask],
    spec_len: int,
    *,
    output_len: int,
    pipelined: bool = True,
) -> tuple[Batches, float]:
    """Algorithm 1 with every task producing ``output_len`` tokens: the batches (in
    processing order) and the T_inf the DP computed for them."""
    order = length_order(tasks)
    num_tasks = len(order)
    num_steps = costs.num_steps(output_len, spec_len)
    drafted = np.zeros((num_tasks + 1, num_steps))  # Υ[i, n, 0]
    verified = np.zeros((num_tasks + 1, num_steps))  # Υ[i, n, 1]
    start = [0] * (num_tasks + 1)  # S[i] (1-based j*)
    totals = np.zeros(num_tasks + 1)
    for i in range(1, num_tasks + 1):
        input_len = tasks[order[i - 1]].input_len
        limit = min(i, costs.max_batch(input_len, output_len))
        if limit < 1:
            raise ValueError(
                f"task {order[i - 1]} (I={input_len}, O={output_len}) does not fit the SBS "
                f"memory of {costs.sbs_memory_bytes:.3g} B on its own (Eqs. 9-10)"
            )
        times = costs.step_times(input_len, spec_len, num_steps)
        js = np.arange(i - limit + 1, i + 1)  # candidate j (1-based), batch j..i
        sizes = (i - js + 1)[:, None]
        draft_s = sizes * times.draft_per_task_s[None, :] + times.draft_fixed_s
        verify_s = sizes * times.verify_per_task_s[None, :] + times.verify_fixed_s
        base = drafted[js - 1] if pipelined else verified[js - 1]
        draft_end = base + draft_s
        verify_end = np.maximum(draft_end, verified[js - 1]) + verify_s
        best = int(np.argmin(verify_end.sum(axis=1)))  # first minimum: smallest j
        drafted[i], verified[i] = draft_end[best], verify_end[best]
        start[i] = int(js[best])
        totals[i] = float(verify_end[best].sum())
    batches: list[tuple[int, ...]] = []
    i = num_tasks
    while i > 0:
        batches.append(tuple(order[start[i] - 1 : i]))
        i = start[i] - 1
    return tuple(reversed(batches)), float(totals[num_tasks])


def chunks(order: Sequence[int], size: int) -> Batches:
    """``order`` cut into consecutive batches of ``size`` (the last one shorter)."""
    if size < 1:
        raise ValueError(f"batch size must be >= 1, got {size}")
    return tuple(tuple(order[s : s + size]) for s in range(0, len(order), size))


def max_batches(costs: PipelineCosts, tasks: Sequence[PipelineTask], output_len: int) -> Batches:
    """Max batching: arrival order, each batch as large as the SBS memory allows."""
    batches: list[tuple[int, ...]] = []
    current: list[int] = []
    for k in range(len(tasks)):
        padded = max([tasks[j].input_len for j in current] + [tasks[k].input_len])
        if current and len(current) + 1 > costs.max_batch(padded, output_len):
            batches.append(tuple(current))
            current = []
        current.append(k)
    batches.append(tuple(current))
    return tuple(batches)


def memory_problem(
    costs: PipelineCosts, tasks: Sequence[PipelineTask], batches: Batches
) -> str | None:
    """Why ``batches`` of ``tasks`` break the SBS memory Γ_s (Eqs. 9-10, constraint 24b:
    each batch padded to its longest input and its tasks' longest output), ``None`` when
    each fits: the one check of every batching rule's answer (the baselines filled batches
    past it, and a planner's ``output_len`` below the tasks' own did too)."""
    for number, batch in enumerate(batches, 1):
        longest_in = max(tasks[k].input_len for k in batch)
        longest_out = max(tasks[k].output_len for k in batch)
        if len(batch) > costs.max_batch(longest_in, longest_out):
            per_task = costs.draft.kv_bytes_per_token() * (longest_in + longest_out)
            need = costs.draft.param_bytes + len(batch) * per_task
            return (
                f"batch {number} of {len(batches)} ({len(batch)} tasks, padded to "
                f"I={longest_in}, O={longest_out}) needs {need / 1e9:.3g} GB, over the SBS "
                f"memory of {costs.sbs_memory_bytes / 1e9:.3g} GB (Eqs. 9-10)"
            )
    return None


def memory_cap(costs: PipelineCosts, tasks: Sequence[PipelineTask], output_len: int) -> int:
    """The largest batch size any batch of these tasks may have (padding to the longest
    input of all tasks), at least 1."""
    longest = max(t.input_len for t in tasks)
    return max(1, costs.max_batch(longest, output_len))


def heuristic_batches(
    tasks: Sequence[PipelineTask], latency_s: Callable[[Batches], float], max_size: int
) -> Batches:
    """Heuristic batching [34]: equal batches of length-sorted tasks, b = 2, 3, … up to
    ``max_size``, kept while the latency improves."""
    order = length_order(tasks)
    best = chunks(order, min(2, max_size, len(order)))
    best_s = latency_s(best)
    for size in range(3, min(max_size, len(order)) + 1):
        candidate = chunks(order, size)
        candidate_s = latency_s(candidate)
        if candidate_s > best_s:
            break
        best, best_s = candidate, candidate_s
    return best
