"""``edgespec drafting-server --plan SCENARIO``: the planner of a ``pipeline:`` scenario
(the simulator's form) plans the run's batches and γ, as ``edgespec sim`` plans on the
same file: its system, planner and costs by :mod:`edgespec.hardware.drafting_plan`, the
sessions' prompt lengths and budgets through the shared input builder
(:func:`edgespec.runtime.edge.drafting_server.plan_sessions`). A loopback or LAN run has
no radio: every session's spectral efficiency is 1 bit/s/Hz over the cell's band, and the
plan's bandwidth shares and upload time are reported, not used."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from edgespec.config import ConfigError, located_in
from edgespec.config.scenario_files import scenario_path
from edgespec.hardware.drafting_plan import (
    PipelineSystem,
    build_costs,
    build_planner,
    load_planning,
)
from edgespec.policies.drafting_server.costs import PipelineCosts
from edgespec.policies.drafting_server.planner import PipelinePlan
from edgespec.policies.interfaces import DraftingPlanner
from edgespec.runtime.edge.drafting_server import plan_sessions

MAX_LISTED_BATCHES = 16
"""The most batch sizes the plan's line lists (``--json`` has every batch)."""


@dataclass(frozen=True, slots=True)
class Planning:
    """``--plan``'s scenario file, its system, its costs, and the planner its planner
    section names (built with those costs)."""

    path: Path
    system: PipelineSystem
    costs: PipelineCosts
    planner: DraftingPlanner


def load_plan_flag(text: str | None) -> Planning | None:
    """``--plan``'s scenario (a file or a bundled scenario's name, as ``edgespec sim``
    takes it: :func:`~edgespec.config.scenario_files.scenario_path`), checked, and its
    planner built (before the server is asked or the draft loads); an error names the
    file's line and the field."""
    if text is None:
        return None
    path = scenario_path(text)
    system = load_planning(path)
    with located_in(path):
        costs = build_costs(system)
        return Planning(path, system, costs, build_planner(system, costs))


def check_server_limit(planning: Planning, max_draft_tokens: int | None) -> None:
    """Refuse, at the scenario's line, a plan whose l the server's ``max_draft_tokens``
    would refuse: a fixed ``spec_len`` over it, or (``spec_len: null``: the planner picks
    any l of 1..``max_spec_len``) a ``max_spec_len`` over it; before the draft loads."""
    planner = planning.system.planner
    if max_draft_tokens is None:
        return
    if planner.spec_len is not None:
        name, value, why = "spec_len", planner.spec_len, ""
    else:
        name, value = "max_spec_len", planner.max_spec_len
        why = f" (spec_len is null: the planner may pick any l of 1..{value})"
    if value > max_draft_tokens:
        with located_in(planning.path):
            raise ConfigError(
                f"pipeline.planner.{name}",
                f"{value} exceeds the server's max_draft_tokens {max_draft_tokens}{why}: "
                f"set it <= {max_draft_tokens}",
            )


def planned_output_len(planning: Planning, max_new_tokens: Sequence[int]) -> int:
    """The O every session is planned for: ``planner.output_len``, else the longest
    budget (the paper's O_max: here the bound is known)."""
    return planning.system.planner.output_len or max(max_new_tokens)


def plan_run(
    planning: Planning,
    prompts: Sequence[Sequence[int]],
    max_new_tokens: Sequence[int],
    max_draft_tokens: int | None,
) -> PipelinePlan:
    """The planner's plan for these sessions (their budgets ``max_new_tokens``), its
    ``spec_len`` within the server's ``max_draft_tokens`` (one line naming the planner
    otherwise). Every session is planned for ``planner.output_len`` tokens, else for the
    longest budget (the paper's O_max: here the bound is known, where the simulator's
    drawn tasks have ``max_output_tokens``)."""
    system = planning.system
    planner = planning.planner
    output_len = planned_output_len(planning, max_new_tokens)
    with located_in(planning.path):  # a task the SBS memory cannot hold: its field's line
        _check_fits(planning.costs, prompts, output_len)
        if system.planner.output_len is None:
            longest = replace(system, max_output_tokens=output_len)
            planner = build_planner(longest, planning.costs)
        plan = plan_sessions(planner, prompts, max_new_tokens, system.cell.bandwidth_hz)
    if max_draft_tokens is not None and plan.spec_len > max_draft_tokens:
        raise ConfigError(
            "plan",
            f"planner {planning.system.planner.name}'s spec_len {plan.spec_len} exceeds the "
            f"server's max_draft_tokens {max_draft_tokens} (bound pipeline.planner."
            "max_spec_len or spec_len in the scenario)",
        )
    return plan


def _check_fits(costs: PipelineCosts, prompts: Sequence[Sequence[int]], output_len: int) -> None:
    """A session the SBS memory cannot hold on its own (Eqs. 9-10), named as the rest of
    the command names prompts: a :class:`ConfigError` at ``pipeline.sbs_memory_gb``."""
    for k, prompt in enumerate(prompts):
        if costs.max_batch(len(prompt), output_len) < 1:
            raise ConfigError(
                "pipeline.sbs_memory_gb",
                f"prompt {k + 1} of {len(prompts)} ({len(prompt)} prompt tokens + "
                f"{output_len} new) does not fit the SBS memory of "
                f"{costs.sbs_memory_bytes:.3g} B on its own (Eqs. 9-10)",
            )


def run_pipelined(args: argparse.Namespace, planning: Planning | None) -> bool:
    """Whether the run is pipelined: ``--pipeline``/``--no-pipeline`` when given, else the
    ``--plan`` planner's ``pipelined`` (a plan for SD without pipeline runs without it),
    else pipelined."""
    if args.pipeline is not None:
        return bool(args.pipeline)
    return planning is None or planning.system.planner.pipelined


def check_pipelined_calls(args: argparse.Namespace, planning: Planning | None) -> None:
    """Pipelined, the calls of every batch in flight share one gRPC connection, up to all
    ``--num-sessions`` at once, which carries at most ``MAX_CONCURRENT_STREAMS`` (256): more
    had some refused ``UNAVAILABLE`` (REFUSED_STREAM) and the run failed as if no server were
    there; ``ConfigError`` before anything loads."""
    from edgespec.runtime.wire.grpc_limits import MAX_CONCURRENT_STREAMS

    pipelined = args.compare or run_pipelined(args, planning)
    if pipelined and args.num_sessions > MAX_CONCURRENT_STREAMS:
        raise ConfigError("num_sessions", f"must be <= {MAX_CONCURRENT_STREAMS} pipelined, the "
                          "calls one gRPC connection carries at once (every batch in flight "
                          f"sends on it), got {args.num_sessions}: give --no-pipeline")  # fmt: skip


def plan_record(planning: Planning, plan: PipelinePlan) -> dict[str, Any]:
    """The plan used, for ``--json``'s settings."""
    return {
        "scenario": str(planning.path),
        "planner": planning.system.planner.name,
        "planned_pipelined": planning.system.planner.pipelined,
        "alpha": planning.costs.acceptance,
        "batches": [list(batch) for batch in plan.batches],
        "spec_len": plan.spec_len,
        "planned_inference_s": plan.planned_inference_s,
    }


def batch_sizes(plan: PipelinePlan) -> str:
    """The plan's batch sizes, ``[2, 4, 2]`` (the first :data:`MAX_LISTED_BATCHES`)."""
    sizes = [len(batch) for batch in plan.batches]
    more = ", …" if len(sizes) > MAX_LISTED_BATCHES else ""
    return f"[{', '.join(str(n) for n in sizes[:MAX_LISTED_BATCHES])}{more}]"


def plan_line(planning: Planning, plan: PipelinePlan) -> str:
    """The plan used, one line: the planner, the batches' sizes, spec_len, pipelined or
    not, the α it assumed and its T_inf."""
    num_batches = len(plan.batches)
    batches = (
        f"{num_batches} batch of size" if num_batches == 1 else f"{num_batches} batches of sizes"
    )
    mode = "pipelined" if planning.system.planner.pipelined else "not pipelined"
    return (
        f"[plan: planner {planning.system.planner.name} ({planning.path}), "
        f"{batches} {batch_sizes(plan)}, spec_len {plan.spec_len}, {mode}, "
        f"alpha {planning.costs.acceptance:g}, planned T_inf {plan.planned_inference_s:.4g} s]"
    )


def implied_alpha(costs: PipelineCosts, accepted_per_round: float, spec_len: int) -> float | None:
    """Eq. 7 inverted: the α at which blocks of ``spec_len`` tokens commit
    ``accepted_per_round`` + 1 tokens a round (bisection; L rises with α from 1 to l + 1);
    None when no α in [0, 1] does."""
    wanted = accepted_per_round + 1.0
    if not 1.0 <= wanted <= spec_len + 1.0:
        return None
    low, high = 0.0, 1.0
    for _ in range(60):
        middle = (low + high) / 2.0
        if replace(costs, acceptance=middle).tokens_per_step(spec_len) < wanted:
            low = middle
        else:
            high = middle
    return (low + high) / 2.0


def plan_comparison(
    planning: Planning, plan: PipelinePlan, max_new_tokens: Sequence[int], result: Any
) -> dict[str, Any]:
    """A run against its plan, for ``--json``'s run: planned T_inf and steps (Eq. 8 over
    the planned O and the scenario's α) against the measured wall and steps, and the α
    the run's acceptance implies (None when Eq. 7 cannot be inverted)."""
    steps = planning.costs.num_steps(planned_output_len(planning, max_new_tokens), plan.spec_len)
    return {
        "planned_inference_s": plan.planned_inference_s,
        "wall_over_planned": result.wall_s / max(plan.planned_inference_s, 1e-12),
        "planned_steps": steps,
        "alpha": planning.costs.acceptance,
        "implied_alpha": implied_alpha(planning.costs, result.accepted_per_round, plan.spec_len),
    }


def comparison_text(compared: dict[str, Any], result: Any, spec_len: int) -> str:
    """:func:`plan_comparison`'s figures for the run's stats line."""
    text = (
        f"planned T_inf {compared['planned_inference_s']:.4g} s vs measured "
        f"{result.wall_s:.2f} s ({compared['wall_over_planned']:.2f}×), "
        f"{compared['planned_steps']} planned steps vs {result.num_steps}"
    )
    if compared["implied_alpha"] is None:
        return text
    return (
        f"{text}; alpha {compared['implied_alpha']:.2f} implied by "
        f"{result.accepted_per_round:.2f} accepted per round at spec_len {spec_len} vs the "
        f"scenario's {compared['alpha']:g}"
    )
