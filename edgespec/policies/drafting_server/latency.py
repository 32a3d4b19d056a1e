"""Zhu et al. (seed 001, §II-E) inference latency of a batching: the pipeline recursion
and the two schemes it is compared with.

* Pipelined SD (Eqs. 20–22): at step n, batch m's draft may start once batch m−1's draft
  ended (the SBS drafts the batches back to back, C^d_{n,m} = Σ_{i≤m} T^d_{n,i}); its
  verification once its draft ended and batch m−1's verification ended,
  C_{n,m} = max{C^d_{n,m}, C_{n,m−1}} + T^v_{n,m}. Only the batches still decoding take
  part in step n (M_n = {m : n_m ≥ n}, n_m = ⌈O_m / L⌉, Eq. 8); steps are barriers,
  T_n = C_{n,M_n} and T_inf = Σ_n T_n.
* SD without pipeline [35]: batch m's draft waits for batch m−1's verification.
* Autoregressive serving (ADS): the verify model alone on the MBS, batch after batch, a
  prefill (Eq. 11) and then one decode pass (Eq. 12) per further output token, with the
  same Eq. 17 runtime. Memory on the MBS is Eqs. 9–10 applied to the verify model
  (the paper ignores the verify model's memory; ADS needs some batch limit, see
  :func:`autoregressive_max_batch`).

A batch is a tuple of task indices; its inputs are padded to the longest (I_m) and it
decodes until its longest output (O_m) is done.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Integral

import numpy as np

from edgespec.policies.drafting_server.costs import FloatArray, PipelineCosts, StepTimes

Batches = tuple[tuple[int, ...], ...]


@dataclass(frozen=True, slots=True)
class PipelineTask:
    """One user's task: prompt tokens I_k, output tokens O_k (or the bound the planner
    assumes), and its uplink's spectral efficiency log2(1 + p·g/σ²) in bit/s/Hz."""

    input_len: int
    output_len: int
    spectral_efficiency: float = 1.0

    def __post_init__(self) -> None:
        if self.input_len < 1 or self.output_len < 1:
            raise ValueError(
                f"a task needs >= 1 input and output token, got I={self.input_len}, "
                f"O={self.output_len}"
            )
        if self.spectral_efficiency <= 0:
            raise ValueError(f"spectral efficiency must be > 0, got {self.spectral_efficiency}")


def batch_shape(tasks: Sequence[PipelineTask], batch: Sequence[int]) -> tuple[int, int, int]:
    """(I_m, O_m, b_m): padded input, longest output and size of ``batch``."""
    if not batch:
        raise ValueError("a batch needs at least one task")
    return (
        max(tasks[k].input_len for k in batch),
        max(tasks[k].output_len for k in batch),
        len(batch),
    )


def batches_problem(num_tasks: int, batches: Sequence[Sequence[object]]) -> str | None:
    """What breaks constraint 24c (every task in exactly one batch, no batch empty) in
    ``batches``, or ``None``: the first empty batch, task index that is not one of the
    ``num_tasks``, task held twice, or task left out."""
    seen: set[object] = set()
    for m, batch in enumerate(batches):
        if not batch:
            return f"batch {m} is empty"
        for k in batch:
            if isinstance(k, bool) or not isinstance(k, Integral) or not 0 <= int(k) < num_tasks:
                return f"batch {m} holds {k!r}, not a task index in 0..{num_tasks - 1}"
            if k in seen:
                return f"task {k} is in two batches"
            seen.add(k)
    missing = [k for k in range(num_tasks) if k not in seen]
    return f"task {missing[0]} is in no batch" if missing else None


def check_batches(num_tasks: int, batches: Batches) -> None:
    """Every task in exactly one batch (constraint 24c): a ``ValueError`` otherwise."""
    if (problem := batches_problem(num_tasks, batches)) is not None:
        raise ValueError(f"batches must hold each of the {num_tasks} tasks once: {problem}")


def step_latencies_s(
    costs: PipelineCosts,
    tasks: Sequence[PipelineTask],
    batches: Batches,
    spec_len: int,
    *,
    pipelined: bool = True,
) -> FloatArray:
    """T_n for n = 1..N (Eq. 21; without the pipeline when ``pipelined`` is false)."""
    check_batches(len(tasks), batches)
    shapes = [batch_shape(tasks, batch) for batch in batches]
    steps = [costs.num_steps(o, spec_len) for _, o, _ in shapes]
    num_steps = max(steps)
    times: dict[int, StepTimes] = {}
    drafted = np.zeros(num_steps)
    verified = np.zeros(num_steps)
    index = np.arange(num_steps)
    for (input_len, _, size), batch_steps in zip(shapes, steps, strict=True):
        if input_len not in times:
            times[input_len] = costs.step_times(input_len, spec_len, num_steps)
        draft_s, verify_s = times[input_len].batch(size, num_steps)
        active = index < batch_steps
        draft_end = (drafted if pipelined else verified) + draft_s
        verify_end = np.maximum(draft_end, verified) + verify_s
        drafted = np.where(active, draft_end, drafted)
        verified = np.where(active, verify_end, verified)
    return verified


def inference_latency_s(
    costs: PipelineCosts,
    tasks: Sequence[PipelineTask],
    batches: Batches,
    spec_len: int,
    *,
    pipelined: bool = True,
) -> float:
    """Eq. 22: T_inf = Σ_n T_n."""
    return float(step_latencies_s(costs, tasks, batches, spec_len, pipelined=pipelined).sum())


def autoregressive_max_batch(
    costs: PipelineCosts, mbs_memory_bytes: float, input_len: int, output_len: int
) -> int:
    """Most tasks of padded lengths (I, O) an ADS batch may hold: Eqs. 9–10 for the
    verify model within ``mbs_memory_bytes`` (0 when its weights alone do not fit)."""
    free = mbs_memory_bytes - costs.verify.param_bytes
    per_task = costs.verify.kv_bytes_per_token() * (input_len + output_len)
    return max(0, int(free // per_task))


def autoregressive_latency_s(
    costs: PipelineCosts, tasks: Sequence[PipelineTask], batches: Batches
) -> float:
    """ADS: Σ_m [prefill of I_m + (O_m − 1) decode passes over I_m + t − 1 cached tokens,
    t = 1..O_m − 1], each pass c^v_1·F·b + c^v_2 (Eqs. 11, 12, 17)."""
    check_batches(len(tasks), batches)
    stage, model = costs.verify_stage, costs.verify
    total = 0.0
    for batch in batches:
        input_len, output_len, size = batch_shape(tasks, batch)
        prefill = float(model.flops(float(input_len), 0.0))
        cached = input_len + np.arange(output_len - 1, dtype=np.float64)
        decode = float(model.flops(1.0, cached).sum())
        total += stage.c1_s_per_flop * size * (prefill + decode) + output_len * stage.c2_s
    return total
