"""The held-out check's plans (``edgespec reproduce wisv-heldout``, :mod:`.heldout`): the
full check (:data:`FULL`), the quick one (:data:`QUICK`), either cut by ``--prompts`` and
``--lossy-prompts`` (:func:`check_plan`), and what a quick check leaves out of the full
one (:func:`left_out`, read off the two plans in :mod:`edgespec.reproduce.left_out`'s
words, as every quick reproduction's list)."""

from __future__ import annotations

from dataclasses import dataclass

from edgespec.errors import UserInputError
from edgespec.reproduce.left_out import cut, missing, not_run, numbers


@dataclass(frozen=True, slots=True)
class CheckPlan:
    """What a check runs: its prompts (the first of GSM8K's test split; target-only and
    exact SD, T = 0, run on every one), WISV's thresholds above 0, and on how many of the
    prompts those run (``None``: all)."""

    num_prompts: int
    thresholds: tuple[int, ...]
    lossy_prompts: int | None = None


FULL = CheckPlan(50, (1, 2, 4, 8, 12))
"""The full check: 50 prompts, WISV at T = 1, 2, 4, 8 and 12 on every one (a user asking
for a T between them is told the agreement measured at the nearest ones below and above)."""
QUICK = CheckPlan(2, (12,))
"""The quick check: 2 prompts, WISV at T = 12 on both."""


def check_plan(quick: bool, prompts: int | None, lossy_prompts: int | None) -> CheckPlan:
    """:data:`QUICK` or :data:`FULL`, cut to ``prompts`` and ``lossy_prompts``; a
    :class:`UserInputError` for more prompts than the check has or more lossy ones than it
    runs (they were cut silently)."""
    plan = QUICK if quick else FULL
    if prompts is not None and prompts > plan.num_prompts:
        which = "the quick check has" if quick else "the check has"
        raise UserInputError(f"--prompts {prompts}: {which} {plan.num_prompts} prompts")
    count = plan.num_prompts if prompts is None else prompts
    if lossy_prompts is not None and lossy_prompts > count:
        raise UserInputError(f"--lossy-prompts {lossy_prompts}: the check runs {count} prompts")
    lossy = plan.lossy_prompts if lossy_prompts is None else lossy_prompts
    return CheckPlan(count, plan.thresholds, lossy)


def left_out(plan: CheckPlan) -> list[str]:
    """What ``plan`` leaves out of :data:`FULL`, read off the two plans: the thresholds it
    does not run, then the prompts it runs fewer of (all its runs, then WISV's above T = 0
    alone); empty for the full plan."""
    out = []
    if thresholds := missing(FULL.thresholds, plan.thresholds):
        kept = f"T = {numbers(plan.thresholds)}" if plan.thresholds else ""
        out.append(not_run("WISV at T =", numbers(thresholds), kept))
    if plan.num_prompts != FULL.num_prompts:
        what = "target-only, exact SD and WISV:"
        out.append(cut(what, plan.num_prompts, FULL.num_prompts, "prompt"))
    if plan.lossy_prompts is not None and plan.lossy_prompts < plan.num_prompts:
        out.append(cut("WISV above T = 0:", plan.lossy_prompts, FULL.num_prompts, "prompt"))
    return out
