"""REPORT.md's *Where the paper is wrong* for DSD (SEED-NOTES §4.4 items 2, 3 and 8): each of
the paper's text claims and printed percentages that its own Table 2 contradicts, computed from
Table 2's absolute values, with which the D4 and D5 rows compare."""

from __future__ import annotations

from edgespec.reproduce.claims import PaperError
from edgespec.reproduce.dsd.paper import PAPER_TABLE2, PRINTED_TPOT_PCT

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


def paper_errors() -> tuple[PaperError, ...]:
    """DSD's known errors, each computed from Table 2 as printed."""
    return (_best_throughput(), _gain_range(), _tpot_misprints(), _tpot_claim())
