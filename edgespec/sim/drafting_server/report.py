"""The printed report and the JSON record of a ``pipeline:`` scenario's run."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from edgespec.sim.drafting_server.build import PipelineRun
from edgespec.sim.drafting_server.result import PipelineSimResult

MAX_LISTED = 12
"""Batch sizes and step counts listed in full up to this many batches."""


def _listed(values: tuple[int, ...]) -> str:
    shown = ", ".join(str(v) for v in values[:MAX_LISTED])
    return shown + (f", … ({len(values)} in all)" if len(values) > MAX_LISTED else "")


def report_lines(run: PipelineRun) -> list[str]:
    """A short readable report: the plan, T_com, T_inf analytic vs simulated, T, the
    accelerators' utilisation and the MBS schedule."""
    cfg, plan, result = run.scenario.pipeline, run.plan, run.result
    sim = cfg.simulation
    barrier = "step barrier" if sim.step_barrier else "no step barrier"
    pipelined = "pipelined" if cfg.planner.pipelined else "no pipeline"
    sizes = tuple(len(b) for b in plan.batches)
    lines = [
        f"{run.scenario.name}: {len(run.obs.tasks)} users, {run.costs.draft.name} drafting on "
        f"the SBS, {run.costs.verify.name} verifying on the MBS, alpha = {cfg.alpha}, "
        f"seed {run.scenario.seed}",
        f"plan: l = {plan.spec_len}, {len(sizes)} batches of sizes {_listed(sizes)} "
        f"({cfg.planner.batching} batching, {pipelined}, {cfg.planner.bandwidth} bandwidth)",
        f"T_com = {plan.upload_s:.4f} s; T_inf analytic {run.analytic_inference_s:.4f} s, "
        f"simulated {result.inference_s:.4f} s ({sim.acceptance} acceptance, {barrier}); "
        f"T = {result.makespan_s:.4f} s",
        f"steps per batch: {_listed(result.batch_steps)}; SBS busy {result.sbs_utilisation:.1%}, "
        f"MBS busy {result.mbs_utilisation:.1%}; {result.num_events} events",
    ]
    lines.append(_schedule_line(run, result))
    return lines


def _schedule_line(run: PipelineRun, result: PipelineSimResult) -> str:
    """The MBS schedule and, with ``slo_tokens_per_s``, the blocks verified past their
    deadline (the plan's order counts them too)."""
    policy = run.scenario.pipeline.verifier.policy
    slo = run.scenario.pipeline.verifier.slo_tokens_per_s is not None
    missed = f"; {result.deadline_misses} of {result.num_blocks} blocks past their deadline"
    if policy is None or run.plan_order is None:
        plan = f"MBS schedule: the plan's order, one pass per batch ({result.num_passes} passes)"
        return plan + (missed if slo else "")
    base = run.plan_order.makespan_s
    change = (result.makespan_s - base) / base if base > 0 else 0.0
    deadlines = ""
    if slo:
        deadlines = f"{missed} (plan order: {run.plan_order.deadline_misses})"
    return (
        f"MBS schedule: batching policy {policy.name!r} over per-session blocks, "
        f"{result.num_passes} passes of {result.num_blocks / max(result.num_passes, 1):.1f} "
        f"blocks on average (plan order: {run.plan_order.num_passes} passes); "
        f"T = {result.makespan_s:.4f} s vs {base:.4f} s in plan order ({change:+.1%})" + deadlines
    )


def run_record(run: PipelineRun) -> dict[str, Any]:
    """The run as JSON-ready data: the tasks, the plan, the analytic and simulated times."""
    plan = run.plan
    return {
        "name": run.scenario.name,
        "seed": run.scenario.seed,
        "tasks": [asdict(t) for t in run.obs.tasks],
        "plan": {
            "spec_len": plan.spec_len,
            "batches": [list(b) for b in plan.batches],
            "batch_sizes": [len(b) for b in plan.batches],
            "shares": list(plan.shares),
            "planned_inference_s": plan.planned_inference_s,
            "upload_s": plan.upload_s,
        },
        "analytic": {
            "inference_s": run.analytic_inference_s,
            "total_s": run.analytic_total_s,
        },
        "simulated": run.result.to_dict(),
        "plan_order": None if run.plan_order is None else run.plan_order.to_dict(),
    }
