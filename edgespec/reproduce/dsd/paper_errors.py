"""REPORT.md's *Where the paper is wrong* for DSD (SEED-NOTES §4.4 items 2, 3, 5, 6 and 8): each
of the paper's text claims and printed percentages that its own Table 2 contradicts, computed
from Table 2's absolute values, with which the D4 and D5 rows compare; the two hardware lists
(§5 against Fig. 5); and Fig. 5's S4 and Table 2's GSM8K C1 AWC, one configuration with two
printed results, shown with the run's one result for both (:func:`run_paper_errors`)."""

from __future__ import annotations

from collections.abc import Sequence

from edgespec.reproduce.claims import PaperError
from edgespec.reproduce.dsd.paper import PAPER_STACKS, PAPER_TABLE2, PRINTED_TPOT_PCT, TABLE_CONFIGS
from edgespec.reproduce.dsd.runs import DsdResults, stack_name, table_name
from edgespec.reproduce.dsd.setup import DRAFT_HARDWARE, DRAFT_MODELS, FLEETS, STACKS
from edgespec.reproduce.dsd.summary import DsdRunSummary

MISPRINT_PT = 0.1
"""A printed percentage is a misprint where it is this many points or more off the one its
own absolute values give (rounding alone stays below)."""
TEXT_GAIN_PCT = (3.0, 10.0)
"""The text's "+3–10 % over Static" (AWC's throughput)."""
TEXT_TPOT_PCT = 11.0
"""The contributions' "11 % lower TPOT"."""
COMPARED = "the D4 and D5 rows' paper columns are counted and averaged from Table 2's values"


def _awc_change(cell: tuple[str, str], metric: str) -> float:
    static, _, awc = PAPER_TABLE2[cell][metric]
    return 100 * (awc / static - 1.0)


def _name(cell: tuple[str, str]) -> str:
    return f"{cell[1]} {cell[0]}"


def _best_throughput() -> PaperError:
    beaten = [
        f"{_name(cell)} Dynamic {v['thr'][1]:g} > AWC {v['thr'][2]:g} req/s"
        for cell, v in PAPER_TABLE2.items()
        if max(v["thr"][:2]) > v["thr"][2]
    ]
    best = len(PAPER_TABLE2) - len(beaten)
    return PaperError(
        "D4, D5 (text)",
        f"(text) AWC has the best throughput in all {len(PAPER_TABLE2)} cases",
        f"its Table 2 gives {best} of {len(PAPER_TABLE2)} ({'; '.join(beaten)}): {COMPARED}",
    )


def _gain_range() -> PaperError:
    low, high = TEXT_GAIN_PCT
    outside = [
        f"{_name(cell)} {g:+.1f}% ({v['thr'][0]:g} → {v['thr'][2]:g} req/s)"
        for cell, v in PAPER_TABLE2.items()
        if not low <= round(g := _awc_change(cell, "thr")) <= high
    ]
    return PaperError(
        "D4 (text)",
        f"(text) AWC's throughput is +{low:g}–{high:g}% over Static's",
        f"its Table 2 gives {'; '.join(outside)}: {COMPARED}",
    )


def _tpot_misprints() -> PaperError:
    wrong = {
        _name(cell): (printed, ours)
        for cell, printed in PRINTED_TPOT_PCT.items()
        if abs(printed - (ours := _awc_change(cell, "tpot"))) >= MISPRINT_PT
    }
    return PaperError(
        "D4 (Table 2 TPOT percentages)",
        "(Table 2) AWC's TPOT changes over Static's by "
        + ", ".join(f"{p:+.1f}% ({name})" for name, (p, _) in wrong.items()),
        "its own absolute values give "
        + ", ".join(f"{ours:+.1f}%" for _, ours in wrong.values())
        + f": {len(wrong)} of its {len(PRINTED_TPOT_PCT)} TPOT percentages are misprints, "
        "and the D4 rows compare with the absolute values",
    )


def _tpot_claim() -> PaperError:
    drops = {cell: -_awc_change(cell, "tpot") for cell in PAPER_TABLE2}
    cell = max(drops, key=lambda c: drops[c])
    printed = -min(PRINTED_TPOT_PCT.values())
    return PaperError(
        "D4 (contributions)",
        f"(contributions) AWC gives {TEXT_TPOT_PCT:g}% lower TPOT",
        f"Table 2's largest TPOT drop is {drops[cell]:.1f}% ({_name(cell)}), "
        f"{printed:.1f}% as printed",
    )


def _hardware_lists() -> PaperError:
    targets = ", ".join(f"{n} {model} on {hw}" for model, hw, n in FLEETS["paper_4gpu"])
    drafts = f"{' + '.join(DRAFT_HARDWARE)} serving {', '.join(DRAFT_MODELS)}"
    return PaperError(
        "D1–D7 (hardware, §5 vs Fig. 5)",
        "(§5) the edge runs Qwen-7B and Llama2-7B on A40, the cloud Llama2-70B on A100 and "
        "Qwen-72B on H100; (Fig. 5) the cloud pool is LLaMA2-70B, LLaMA3-70B and Qwen-72B on "
        "4×A100, 4×H100 and 4×A6000, the edge pool A40 + V100 serving LLaMA2-7B, Qwen-7B and "
        "LLaMA-3.1-8B",
        "the two lists differ (a third target model, A6000 and V100 only in Fig. 5), and "
        "neither says which draft family pairs with which target (tokenizers). Every run uses "
        f"Fig. 5's: targets {targets}; drafts {drafts}, any draft routed to any target",
    )


def paper_errors() -> tuple[PaperError, ...]:
    """DSD's known errors, each computed from Table 2 and the setting as printed."""
    return (_best_throughput(), _gain_range(), _tpot_misprints(), _tpot_claim(), _hardware_lists())


def _shown(run: DsdRunSummary) -> str:
    ttft = "n/a" if run.ttft_ms is None else f"{run.ttft_ms:.1f} ms"
    tpot = "n/a" if run.tpot_ms is None else f"{run.tpot_ms:.2f} ms"
    return f"{run.throughput_requests_per_s:.2f} req/s, TTFT {ttft}, TPOT {tpot}"


def _same_runs(results: Sequence[DsdResults], stack: str, window: str) -> str:
    """The run of Fig. 5's ``stack``, which is Table 2's GSM8K C1 ``window`` run, per cost
    mode that has both (the same summary: one job ran both)."""
    shown = []
    for res in results:
        fig5, table = res.get(stack_name(stack)), res.get(table_name("gsm8k", "C1", window))
        if fig5 is not None and fig5 == table and res.plan.stack_drafts == TABLE_CONFIGS["C1"][0]:
            shown.append(f"{res.cost_mode} {_shown(fig5)}")
    quick = [r.plan.setup for r in results if r.plan.setup.fleet_share < 1.0]
    if shown and quick:
        shown.append(f"(quick run: {quick[0].fleet_share:g} of the fleet, "
                     f"{quick[0].duration_s:g} s runs, not compared with the paper's)")  # fmt: skip
    return "; ".join(shown) or "not run"


def run_paper_errors(results: Sequence[DsdResults]) -> tuple[PaperError, ...]:
    """Fig. 5's S4 and Table 2's GSM8K C1 AWC (SEED-NOTES §4.4, 6): one configuration, two
    printed results, and the run's one result judged against both; S2, Table 2's C1 Static,
    beside it."""
    thr, ttft, tpot = PAPER_STACKS["s4"]
    cell = PAPER_TABLE2[("gsm8k", "C1")]
    drafts, rtt_ms = TABLE_CONFIGS["C1"]
    stack = " + ".join(STACKS["s4"])
    static = f"{cell['thr'][0]:g} req/s, {cell['ttft'][0]:g} ms, {cell['tpot'][0]:g} ms"
    return (
        PaperError(
            "D2, D4 (Fig. 5 S4 = Table 2 GSM8K C1 AWC)",
            f"(Fig. 5) S4 on GSM8K gives {thr:g} req/s, TTFT {ttft:g} ms, TPOT {tpot:g} ms; "
            f"(Table 2) GSM8K C1 AWC gives {cell['thr'][2]:g} req/s, {cell['ttft'][2]:g} ms, "
            f"{cell['tpot'][2]:g} ms",
            f"both are {stack} with 20 targets, {drafts} drafts and RTT {rtt_ms:g} ms on "
            "GSM8K: one configuration, two results. Here it is one run, judged in D2 against "
            f"Fig. 5's numbers and in D4 against Table 2's: {_same_runs(results, 's4', 'awc')}. "
            f"Likewise S2 ({' + '.join(STACKS['s2'])}) is Table 2's C1 Static, judged in D4 "
            f"against {static} (the think time is fitted to it) and in D2's chain, where Fig. "
            f"5 prints no S2 value: {_same_runs(results, 's2', 'static')}",
        ),
    )
