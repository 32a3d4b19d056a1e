"""``edgespec drafting-server --plan``'s profiles against what the run has: the plan's times
are its scenario's ``draft_profile`` and ``verify_profile`` (zhu profiles), so a profile file
measured on another model than the draft (``--draft``) or the server's target (its Health
reply) is said (:func:`model_warnings`), and so is a profile used beyond the batch size or
tokens it measured (:func:`range_warnings`: the plan's largest batch, and its tasks' I + O,
a session's prompt plus the output it is planned for), each in one line on stderr, as
``edgespec serve --profile`` and ``edgespec sim`` say theirs
(:mod:`edgespec.hardware.profile_info`; the range's lines computed as the simulator's are,
:func:`~edgespec.hardware.drafting_plan.plan_range_warnings`). A bundled profile (a paper's
coefficients, named on purpose) is not checked for its model, as ``serve`` does not check
one; a profile that does not record its model or range is checked for neither."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from edgespec.hardware.drafting_plan import PipelineSystem, plan_range_warnings
from edgespec.hardware.profile_info import profile_info
from edgespec.hardware.profile_source import PROFILE_SUFFIXES
from edgespec.models.registry import same_model
from edgespec.policies.drafting_server.planner import PipelinePlan
from edgespec.runtime.commands.drafting_server_plan import Planning, planned_output_len


def model_warnings(system: PipelineSystem, draft: str, served: str | None) -> list[str]:
    """A line for each profile file of ``system`` measured on another model than the one
    whose times it gives the plan: ``draft_profile`` than ``draft`` (``--draft``),
    ``verify_profile`` than ``served`` (the server's target; ``None``: the server does not
    say, not checked)."""
    stages = (
        ("draft_profile", system.draft_profile, draft, "the draft is"),
        ("verify_profile", system.verify_profile, served, "the server serves"),
    )
    lines = []
    for field, profile, model, runs in stages:
        if model is None or Path(profile).suffix not in PROFILE_SUFFIXES:
            continue
        measured = profile_info(profile).model
        if measured is not None and not same_model(measured, model):
            lines.append(
                f"warning: --plan's {field} {profile} was measured on {measured}, {runs} "
                f"{model}: the plan's times are another model's"
            )
    return lines


def range_warnings(
    planning: Planning,
    plan: PipelinePlan,
    prompts: Sequence[Sequence[int]],
    max_new_tokens: Sequence[int],
) -> list[str]:
    """A line for each profile of ``planning`` that the plan uses beyond what it measured
    (:func:`~edgespec.hardware.drafting_plan.plan_range_warnings`, as ``edgespec sim``
    says them): batches up to the plan's largest, tasks of up to the longest prompt plus the
    planned output (I + O)."""
    output_len = planned_output_len(planning, max_new_tokens)
    lengths = [(len(prompt), output_len) for prompt in prompts]
    return plan_range_warnings(planning.system, plan, lengths)
