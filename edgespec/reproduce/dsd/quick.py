"""What ``edgespec reproduce dsd --quick`` leaves out of the full run, read off the two plans
(:class:`~edgespec.reproduce.dsd.runs.DsdPlan`, so the list stays true when a plan changes):
the datasets, configurations, RTTs, draft counts and LAB bounds it does not run, then what
it shortens. REPORT.md ends with it and the terminal prints it."""

from __future__ import annotations

from collections.abc import Sequence

from edgespec.reproduce.dsd.runs import DsdPlan
from edgespec.reproduce.dsd.sweep_claims import shortened
from edgespec.reproduce.left_out import and_list, cut, missing, not_run, numbers


def _bounds(bounds: Sequence[float | None]) -> str:
    return and_list(["none" if b is None else f"{b:g}" for b in bounds])


def _not_run(plan: DsdPlan) -> list[str]:
    """The values of the full plan's sweeps that ``plan`` does not run."""
    full, out = DsdPlan.full(), []
    table = "D4, D5 (Table 2)"
    if datasets := missing(full.datasets, plan.datasets):
        out.append(not_run(f"{table} on", and_list(datasets), and_list(plan.datasets)))
    if configs := missing(full.table_configs, plan.table_configs):
        out.append(not_run(f"{table} in", and_list(configs), and_list(plan.table_configs)))
    if rtts := missing(full.crossover_rtts_ms, plan.crossover_rtts_ms):
        kept = numbers(plan.crossover_rtts_ms, "ms")
        out.append(not_run("D3 at RTT =", numbers(rtts, "ms"), kept))
    if variant := missing(full.variant_rtts_ms, plan.variant_rtts_ms):
        kept = numbers(plan.variant_rtts_ms, "ms") if plan.variant_rtts_ms else ""
        claims = "D3 on DSD-Sim's TP-1 fleet (a sensitivity) at RTT ="
        out.append(not_run(claims, numbers(variant, "ms"), kept))
    if drafts := missing(full.sweep_drafts, plan.sweep_drafts):
        kept = numbers(plan.sweep_drafts, "drafts")
        out.append(not_run("D6, D7 at", numbers(drafts, "drafts"), kept))
    if bounds := missing(full.lab_bounds, plan.lab_bounds):
        kept = _bounds(plan.lab_bounds)
        out.append(not_run("D7's LAB length bounds", _bounds(bounds), kept, "a sensitivity"))
    return out


def _shortened(plan: DsdPlan) -> list[str]:
    """What ``plan`` runs smaller than the full plan, each beside the full value."""
    full, out = DsdPlan.full(), []
    if plan.stack_drafts != full.stack_drafts:
        out.append(cut("D2's stacks and D3's runs:", plan.stack_drafts, full.stack_drafts, "draft"))
    if runs := shortened(plan):
        if not plan.past_transient:
            runs += (
                f"; they end inside the start-up transient ({plan.transient_s:.0f} s: three "
                "closed-loop cycles), so no row is judged, direction included"
            )
        out.append(f"every run (D2–D7, both cost modes): {runs}")
    return out


def left_out(plan: DsdPlan) -> list[str]:
    """Everything ``plan`` leaves out of :meth:`DsdPlan.full`, the values not run first;
    empty for the full plan."""
    return [*_not_run(plan), *_shortened(plan)]
