"""Every paper's quick REPORT.md ends with what the quick run leaves out, read off its quick
plan against its full one: each field the quick plan shortens is named (one cut at a time),
the full plan leaves nothing out, and only a quick report has the section, last, as the
terminal prints it."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from edgespec.reproduce.claims import ClaimRow
from edgespec.reproduce.dsd.quick import left_out as dsd_left_out
from edgespec.reproduce.dsd.runs import DsdPlan
from edgespec.reproduce.printed import print_claims
from edgespec.reproduce.report_file import write_report
from edgespec.reproduce.wisp.predictor import PredictorPlan
from edgespec.reproduce.wisp.quick import left_out as wisp_left_out
from edgespec.reproduce.wisp.runs import Plan as WispPlan
from edgespec.reproduce.wisv.real_pair.heldout_plan import FULL as HELDOUT_FULL
from edgespec.reproduce.wisv.real_pair.heldout_plan import QUICK as HELDOUT_QUICK
from edgespec.reproduce.wisv.real_pair.heldout_plan import left_out as heldout_left_out
from edgespec.reproduce.wisv.real_pair.runs import Plan as PairPlan
from edgespec.reproduce.wisv.real_pair.runs import left_out as pair_left_out
from edgespec.reproduce.wisv.runs import WisvPlan
from edgespec.reproduce.wisv.runs import left_out as wisv_left_out
from edgespec.reproduce.zhu.coverage import left_out as zhu_left_out
from edgespec.reproduce.zhu.runs import ZhuPlan
from edgespec.reproduce.zhu.setup import ZhuSetup
from tests.reproduce.reports import check_left_out_last, one_cut_plans

LeftOut = Callable[[Any], list[str]]
PLANS: dict[str, tuple[LeftOut, Any, Any]] = {
    "wisp": (lambda p: wisp_left_out(p, PredictorPlan.full()), WispPlan.full(), WispPlan.quick()),
    "wisp predictor": (
        lambda p: wisp_left_out(WispPlan.full(), p),
        PredictorPlan.full(),
        PredictorPlan.quick(),
    ),
    "dsd": (dsd_left_out, DsdPlan.full(), DsdPlan.quick()),
    "zhu": (lambda p: zhu_left_out(ZhuSetup(), p), ZhuPlan.full(), ZhuPlan.quick()),
    "wisv": (wisv_left_out, WisvPlan.full(), WisvPlan.quick_plan()),
    "wisv-real-pair": (pair_left_out, PairPlan.full(), PairPlan.quick()),
    "wisv-heldout": (heldout_left_out, HELDOUT_FULL, HELDOUT_QUICK),
}
CUTS = [
    (paper, field, plan)
    for paper, (_, full, quick) in PLANS.items()
    for field, plan in one_cut_plans(full, quick)
]


@pytest.mark.parametrize("paper", PLANS)
def test_the_full_plan_leaves_nothing_out(paper: str) -> None:
    left_out, full, quick = PLANS[paper]
    assert left_out(full) == []
    assert left_out(quick)


@pytest.mark.parametrize(("paper", "field", "plan"), CUTS, ids=[f"{p}:{f}" for p, f, _ in CUTS])
def test_each_field_the_quick_plan_shortens_is_named(paper: str, field: str, plan: Any) -> None:
    """The full plan with one of the quick plan's values in place leaves out exactly one
    thing, which its list names: no shortened field goes unsaid."""
    left_out = PLANS[paper][0]
    assert len(left_out(plan)) == 1, (field, left_out(plan))


def test_the_shortened_fields_are_the_expected_ones() -> None:
    """The cuts the test above walks (a plan gaining a cut gains a case there)."""
    assert {paper: [f for p, f, _ in CUTS if p == paper] for paper in PLANS} == {
        "wisp": ["setup.mean_output_tokens", "setup.duration_s", "setup.ramp_s", "targets",
                 "classes", "capacity_hi", "curve_devices", "goodput_devices",
                 "without_predictor", "sensitivity", "operating_probes"],
        "wisp predictor": ["study.mlp_trials", "study.mlp_max_epochs", "study.tree_trials",
                           "study.latency_calls", "setup.mean_output_tokens", "setup.duration_s",
                           "setup.ramp_s", "acceptance_devices", "goodput_devices"],
        "dsd": ["setup.duration_s", "setup.fleet_share", "datasets", "table_configs",
                "crossover_rtts_ms", "sweep_drafts", "variant_rtts_ms"],
        "zhu": ["draws", "alphas", "num_users", "max_inputs", "max_outputs", "bandwidths_mhz",
                "exhaustive_draws", "exhaustive_users", "event_draws"],
        "wisv": ["answers"],
        # V5's 2 prompts alone would leave V6 (6 prompts) without its prompts: the plan
        # refuses it; the quick plan's list names it (below)
        "wisv-real-pair": ["thresholds", "v6_prompts", "v6_rates_mbps", "v6_windows"],
        "wisv-heldout": ["num_prompts", "thresholds"],
    }  # fmt: skip


def test_dsd_quick_plan() -> None:
    assert dsd_left_out(DsdPlan.quick()) == [
        "D4, D5 (Table 2) on humaneval and cnndm: not run, only gsm8k",
        "D4, D5 (Table 2) in C2, C3 and C4: not run, only C1",
        "D3 at RTT = 5, 20, 30, 40, 50, 70, 80 and 100 ms: not run, only 10, 60 and 120 ms",
        "D3 on DSD-Sim's TP-1 fleet (a sensitivity) at RTT = 5, 20, 40, 60, 80 and 100 ms: "
        "not run, only 10 and 120 ms",
        "D6, D7 at 600, 800, 1000, 1600 and 2000 drafts: not run, only 400 and 1200 drafts",
        "every run (D2–D7, both cost modes): 40 s runs on 25% of the fleet (full: 120 s, all "
        "of it): a closed-loop cycle (think time and conversation) takes ≈23 s, so few finish "
        "and the run's start weighs on every mean; they end inside the start-up transient "
        "(70 s: three closed-loop cycles), so no row is judged, direction included",
    ]


def test_zhu_quick_plan() -> None:
    assert zhu_left_out(ZhuSetup(), ZhuPlan.quick()) == [
        "Z1 at α = 0.6, 0.7 and 0.8 (Fig. 6; its rows at every α judged without them): not "
        "run, only α = 0.5 and 0.9",
        "Z2, Z3, Z5 at K = 20, 30, 40, 60, 70, 80; I_max = 128, 256, 768, 1024, 1280, 1536; "
        "O_max = 256, 512, 768, 1280, 1536 (Figs. 7–8; the rows at every point judged without "
        "them): not run, only K = 10, 50, 90, 100; I_max = 1792; O_max = 1024, 1792",
        "Z5 at B = 20, 30 and 35 MHz (Fig. 9): not run, only 15, 25 and 40 MHz",
        "every claim (Z1–Z5): 1 Monte-Carlo draw (full: 20)",
        "Algorithm 1 against exhaustive search: 2 draws (full: 20)",
        "Algorithm 1 against exhaustive search: on 5 users (full: 6)",
        "the plan as events: 1 draw (full: 5)",
    ]


def test_wisv_quick_plans() -> None:
    assert wisv_left_out(WisvPlan.quick_plan()) == [
        "every run (V1–V4, Fig. 5's ablation): sized for 100 answers (full: 500)"
    ]
    assert pair_left_out(PairPlan.quick()) == [
        "V5 at T = 4, 8, 14 and 16: not run, only T = 0 and 12",
        "V6 at 498 Mbit/s: not run, only 172 Mbit/s",
        "V6 at γ = 8: not run, only γ = 4 and 16",
        "V5 (and target-only): 2 prompts (full: 20)",
        "V6: 1 prompt (full: 6)",
    ]


ROW = ClaimRow("X1", "what", "1", "2", "±25%", True, None)
ITEMS = ["X2 at 4 and 6 tok/s: not run, only 2 tok/s", "every run: 60 s runs (full: 300 s)"]


def test_a_quick_report_ends_with_what_it_leaves_out(tmp_path: Path) -> None:
    path = tmp_path / "REPORT.md"
    write_report(path, "T", "cmd", [ROW], [], [], quick=True, appendix="\n## Mine\n\nx\n",
                 left_out=ITEMS)  # fmt: skip
    text = path.read_text()
    check_left_out_last(text, ITEMS)
    assert text.endswith(
        "\n## Mine\n\nx\n\n## What the quick run leaves out\n\n- X2 at 4 and 6 tok/s: not run, "
        "only 2 tok/s\n- every run: 60 s runs (full: 300 s)\n"
    )
    assert "The last section lists what the quick run leaves out of the full one." in text
    write_report(path, "T", "cmd", [ROW], [], [])
    assert "leaves out" not in path.read_text()


@pytest.mark.parametrize(
    ("quick", "items", "said"),
    [(True, [], "a quick run, nothing"), (False, ITEMS, "a full run, 2 item(s)")],
)
def test_only_a_quick_report_and_every_one_says_what_it_leaves_out(
    tmp_path: Path, quick: bool, items: list[str], said: str
) -> None:
    path = tmp_path / "R.md"
    with pytest.raises(ValueError) as error:
        write_report(path, "T", "cmd", [ROW], [], [], quick=quick, left_out=items)
    assert str(error.value) == (
        f"{path}: {said} left out: a quick report, and only a quick one, says what the run "
        "leaves out"
    )
    assert not path.exists()


def test_the_terminal_lists_it_under_the_table_unwrapped() -> None:
    out = io.StringIO()
    long = "W1 at 4 and 6 tok/s (the capacities and the centralized setting there): not run"
    print_claims([ROW], Console(file=out, width=40, markup=False), quick=True, left_out=[long])
    assert out.getvalue().endswith(
        f"quick run leaves out (REPORT.md, “What the quick run leaves out”):\n  - {long}\n"
    )
    full = io.StringIO()
    print_claims([ROW], Console(file=full, width=40, markup=False))
    assert "leaves out" not in full.getvalue()
