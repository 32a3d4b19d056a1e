"""Hand-built DSD results the claim tests judge: a small plan, a run summary of three numbers,
rows by their untagged ``what``, and crossover runs of given TPOTs."""

from __future__ import annotations

from dataclasses import replace

import pytest

from edgespec.reproduce.claims import ClaimRow
from edgespec.reproduce.dsd.causes import (
    MODE_TAGS,
)
from edgespec.reproduce.dsd.runs import (
    CROSSOVER_MODES,
    DsdPlan,
    DsdResults,
    crossover_name,
    table_name,
)
from edgespec.reproduce.dsd.setup import (
    COST_MODES,
    CostMode,
    DsdSetup,
)
from edgespec.reproduce.dsd.summary import DsdRunSummary

PLAN = DsdPlan(DsdSetup(), ("gsm8k",), ("C1", "C2"), (10.0, 40.0, 60.0, 90.0), (400, 1000, 1400))
SUMMED = replace(PLAN, setup=replace(PLAN.setup, batch_pricing="summed"))
"""The plan with D2's stacks and D7's runs priced summed: LAB has no padding to save."""
MODES = pytest.mark.parametrize("mode", COST_MODES)


def run(thr: float, ttft: float, tpot: float) -> DsdRunSummary:
    return DsdRunSummary(thr, ttft, tpot, 100)


def by_what(rows: list[ClaimRow], mode: CostMode = "physical") -> dict[str, ClaimRow]:
    """``rows`` by their ``what`` without the mode tag (every row must carry ``mode``'s)."""
    prefix = f"[{MODE_TAGS[mode]}] "
    assert all(r.what.startswith(prefix) for r in rows)
    return {r.what.removeprefix(prefix): r for r in rows}


def crossover(
    dist: list[float],
    cloud: list[float],
    colocated: list[float] | None = None,
    plan: DsdPlan = PLAN,
) -> DsdResults:
    """Crossover runs of ``plan``'s RTTs: TPOT per round mode (colocated: 99 ms, losing,
    unless given)."""
    colocated = colocated or [99.0] * len(dist)
    runs = {}
    for i, rtt in enumerate(plan.crossover_rtts_ms):
        for mode, tpot in zip(CROSSOVER_MODES, (dist, cloud, colocated), strict=True):
            runs[crossover_name(mode, rtt)] = run(20.0, 300.0, tpot[i])
    return DsdResults(plan, runs)


def table_results(awc_thr_gain: float, awc_tpot: float, mode: CostMode = "physical") -> DsdResults:
    runs = {}
    for config in PLAN.table_configs:
        for window, thr in (("static", 20.0), ("dynamic", 20.5), ("awc", 20.0 * awc_thr_gain)):
            tpot = awc_tpot if window == "awc" else 40.0
            runs[table_name("gsm8k", config, window)] = run(thr, 350.0, tpot)
    return DsdResults(PLAN.in_mode(mode), runs)
