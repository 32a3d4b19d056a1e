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
from edgespec.hardware.drafting_plan import (
    PipelineSystem,
    build_costs,
    build_planner,
    load_planning,
)
from edgespec.policies.drafting_server.planner import PipelinePlan
from edgespec.policies.interfaces import DraftingPlanner
from edgespec.runtime.edge.drafting_server import plan_sessions

MAX_LISTED_BATCHES = 16
"""The most batch sizes the plan's line lists (``--json`` has every batch)."""


@dataclass(frozen=True, slots=True)
class Planning:
    """``--plan``'s scenario file, its system, and the planner its planner section names
    (built with the system's costs)."""

    path: Path
    system: PipelineSystem
    planner: DraftingPlanner


def load_plan_flag(path: str | None) -> Planning | None:
    """``--plan``'s scenario, checked, and its planner built (before the server is asked or
    the draft loads); an error names the file's line and the field."""
    if path is None:
        return None
    system = load_planning(path)
    with located_in(Path(path)):
        return Planning(Path(path), system, build_planner(system, build_costs(system)))


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
    with located_in(planning.path):  # a task the SBS memory cannot hold: its field's line
        if system.planner.output_len is None:
            longest = replace(system, max_output_tokens=max(max_new_tokens))
            planner = build_planner(longest, build_costs(longest))
        plan = plan_sessions(planner, prompts, max_new_tokens, system.cell.bandwidth_hz)
    if max_draft_tokens is not None and plan.spec_len > max_draft_tokens:
        raise ConfigError(
            "plan",
            f"planner {planning.system.planner.name}'s spec_len {plan.spec_len} exceeds the "
            f"server's max_draft_tokens {max_draft_tokens} (bound pipeline.planner."
            "max_spec_len or spec_len in the scenario)",
        )
    return plan


def run_pipelined(args: argparse.Namespace, planning: Planning | None) -> bool:
    """Whether the run is pipelined: ``--pipeline``/``--no-pipeline`` when given, else the
    ``--plan`` planner's ``pipelined`` (a plan for SD without pipeline runs without it),
    else pipelined."""
    if args.pipeline is not None:
        return bool(args.pipeline)
    return planning is None or planning.system.planner.pipelined


def plan_record(planning: Planning, plan: PipelinePlan) -> dict[str, Any]:
    """The plan used, for ``--json``'s settings."""
    return {
        "scenario": str(planning.path),
        "planner": planning.system.planner.name,
        "planned_pipelined": planning.system.planner.pipelined,
        "batches": [list(batch) for batch in plan.batches],
        "spec_len": plan.spec_len,
        "planned_inference_s": plan.planned_inference_s,
    }


def plan_line(planning: Planning, plan: PipelinePlan) -> str:
    """The plan used, one line: the planner, the batches' sizes, spec_len, planned T_inf."""
    sizes = [len(batch) for batch in plan.batches]
    shown = ", ".join(str(n) for n in sizes[:MAX_LISTED_BATCHES])
    more = ", …" if len(sizes) > MAX_LISTED_BATCHES else ""
    return (
        f"[plan: planner {planning.system.planner.name} ({planning.path}), "
        f"{len(sizes)} batches of sizes [{shown}{more}], spec_len {plan.spec_len}, "
        f"planned T_inf {plan.planned_inference_s:.4g} s]"
    )
