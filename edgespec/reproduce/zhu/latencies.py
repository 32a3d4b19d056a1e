"""Latencies of one draw's plans and baselines (Eq. 23 for a plan, ADS), and of the
baselines over the whole range of their chosen inputs (ADS's batch cap, Static batching's
size), with whether the pipeline can gain at a point at all (:func:`one_batch_tie`)."""

from __future__ import annotations

from dataclasses import replace

from edgespec.policies.drafting_server.bandwidth import optimal_upload_s
from edgespec.policies.drafting_server.batching import (
    chunks,
    heuristic_batches,
    length_order,
    memory_cap,
)
from edgespec.policies.drafting_server.costs import PipelineCosts
from edgespec.policies.drafting_server.latency import (
    autoregressive_latency_s,
    autoregressive_max_batch,
    inference_latency_s,
)
from edgespec.policies.drafting_server.planner import (
    PipelineObservation,
    PipelinePlan,
    PipelinePlanner,
)
from edgespec.reproduce.zhu.setup import ZhuSetup


def latency_s(
    costs: PipelineCosts, obs: PipelineObservation, plan: PipelinePlan, pipelined: bool
) -> float:
    """Eq. 23 for a plan: T_com + T_inf with the tasks' own output lengths."""
    return plan.upload_s + inference_latency_s(
        costs, obs.tasks, plan.batches, plan.spec_len, pipelined=pipelined
    )


def ads_latency_s(
    setup: ZhuSetup, costs: PipelineCosts, obs: PipelineObservation, max_output: int
) -> float:
    """ADS: the heuristic batch search on the verify model alone, capped by the MBS memory,
    plus the optimal upload of what the verify model alone reads (:func:`ads_upload_s`)."""
    tasks = obs.tasks
    assumed = tuple(replace(t, output_len=max_output) for t in tasks)
    longest = max(t.input_len for t in tasks)
    cap = autoregressive_max_batch(costs, setup.mbs_memory_gb * 1e9, longest, max_output)
    if cap < 1:
        raise ValueError(f"the verify model {costs.verify.name} does not fit the MBS memory")
    batches = heuristic_batches(assumed, lambda b: autoregressive_latency_s(costs, assumed, b), cap)
    return ads_upload_s(costs, obs) + autoregressive_latency_s(costs, tasks, batches)


def ads_over_sizes_s(costs: PipelineCosts, obs: PipelineObservation) -> tuple[float, float]:
    """ADS's fastest and slowest latency over every batch size b from 1 task to K: equal
    batches of b length-sorted tasks, the plans its heuristic search chooses among, whatever
    limit it runs under (the chosen one is the MBS memory's, :func:`ads_latency_s`)."""
    tasks = obs.tasks
    order = length_order(tasks)
    upload = ads_upload_s(costs, obs)
    latencies = [
        upload + autoregressive_latency_s(costs, tasks, chunks(order, b))
        for b in range(1, len(tasks) + 1)
    ]
    return min(latencies), max(latencies)


def static_over_sizes_s(
    costs: PipelineCosts, obs: PipelineObservation, max_output: int, planner: PipelinePlanner
) -> tuple[float, float]:
    """Static batching's fastest and slowest latency over every batch size from 1 task to
    the SBS memory's cap (the chosen size is :attr:`ZhuSetup.static_batch_size`)."""
    assumed = tuple(replace(t, output_len=max_output) for t in obs.tasks)
    latencies = []
    for size in range(1, memory_cap(costs, assumed, max_output) + 1):
        sized = replace(planner, static_batch_size=size)
        latencies.append(latency_s(costs, obs, sized.plan(obs), sized.pipelined))
    return min(latencies), max(latencies)


def ads_upload_s(costs: PipelineCosts, obs: PipelineObservation) -> float:
    """ADS's optimal upload (Eq. 26): the prompts' embeddings for the verify model alone,
    16·h^v_1 bits a token (the speculative schemes' λ = 16·(h^d_1 + h^v_1) carries the
    draft model's too, which ADS does not run)."""
    bits = [16 * costs.verify.hidden * t.input_len for t in obs.tasks]
    efficiencies = [t.spectral_efficiency for t in obs.tasks]
    return optimal_upload_s(bits, efficiencies, obs.bandwidth_hz)


def one_batch_tie(plans: dict[str, PipelinePlan]) -> bool:
    """The proposed plan and SD w/o pipeline's are one and the same plan (batches, l and
    shares) of a single batch: Eq. 21's pipelined step is then the sequential one (a draft
    pass waits for the previous batch's, and there is none), so both latencies are the same
    sum by the formula, whatever the draw."""
    proposed, sequential = plans["proposed"], plans["no_pipeline"]
    return len(proposed.batches) == 1 and proposed == sequential
