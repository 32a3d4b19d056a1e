"""WISP claims W1–W5 as report rows: the paper's numbers beside ours, with verdicts.

Pure functions of :class:`~edgespec.reproduce.wisp.runs.WispResults`; the numbers
quoted from the paper are SEED-NOTES §1.2's. Each claim states the known cause of its miss
(docs/REPRODUCE.md, "Why the misses"); in a ``--quick`` run the capacities and goodput,
whose magnitudes depend on the run's length and outputs, are marked as the quick run's.
"""

from __future__ import annotations

from edgespec.reproduce.claims import Cause, ClaimRow, Reason, fmt, within
from edgespec.reproduce.wisp.runs import (
    FCFS_OPERATING_LEVEL,
    Plan,
    WispResults,
    knee_devices,
    operating_point,
)
from edgespec.reproduce.wisp.setup import CLASSES
from edgespec.sweeps.capacity import class_violation

# Table 2: capacities (devices) per class 2/4/6/8 tok/s.
TABLE_2 = {
    ("wisp", "qwen3-32b"): (164, 142, 103, 86),
    ("centralized", "qwen3-32b"): (97, 80, 54, 41),
    ("sled", "qwen3-32b"): (83, 42, 27, 21),
    ("wisp", "qwen3-14b"): (245, 223, 194, 154),
    ("centralized", "qwen3-14b"): (198, 165, 109, 86),
    ("sled", "qwen3-14b"): (119, 88, 71, 52),
}
TABLE_3 = {"wisp": 631.86, "centralized": 326.12, "sled": 170.82}
# Table 1 (classes 8, 6, 4, 2 tok/s there), as fractions, by our class names.
TABLE_1 = {
    "wisp": {"c8": 0.9827, "c6": 0.8210, "c4": 0.1080, "c2": 0.0},
    "fcfs": {"c8": 0.9835, "c6": 0.9415, "c4": FCFS_OPERATING_LEVEL, "c2": 0.0},
}
CLASS_INDEX = {"c2": 0, "c4": 1, "c6": 2, "c8": 3}
RATIO_TOLERANCE = 0.25

SLED_RECOMPUTES = Reason(
    Cause.INCONSISTENT,
    "SLED recomputes its whole prefix at every verification: Table 12 prices that at ≈32 ms "
    "against ≈2.8 ms cached (600-token context), so SLED falls about ten times below WISP; "
    "the paper's own Eq. 19 fit does not give its 2–4× gap",
)
TWO_TOK_CONTEXT = Reason(
    Cause.INCONSISTENT,
    "under Table 12 the paper's 2 tok/s centralized capacity needs a mean context of ≈1,070 "
    "tokens, its 4–8 tok/s ones ≈600; one length distribution serves every class "
    "(SEED-NOTES §1.3)",
)
QWEN3_14B = Reason(
    Cause.MISSING_INPUT,
    "Qwen3-14B's Eq. 19 coefficients: Table 12 scaled by architecture ratios stands in "
    "(a100-qwen3-14b-scaled)",
)
GAP_FLAT = Reason(
    Cause.INCONSISTENT,
    "Table 12 charges WISP and centralized b_read per cached token alike, so their ratio stays "
    "near the committed tokens per round (≈2.7) at every τ; the widening does not follow from "
    "the paper's own fit (its WISP may include the rejection predictor, which W1–W5 leave out)",
)
ALGORITHM_1_TRADES = Reason(
    Cause.MODELLING,
    "Algorithm 1 as printed (open points decided in edgespec/policies/wisp.py) trades the low "
    "classes for the high ones: deadline-bound batches are smaller and pay c = 14.86 ms more "
    "often, so at this overloaded N WISP is worse at 4 and 2 tok/s",
)
DETERMINISTIC_VERIFIER = Reason(
    Cause.MODELLING,
    "the simulated verifier is Eq. 19 itself, deterministic: its time varies with the batch's "
    "composition only, never with noise, so violations are queue-dominant (on the real "
    "server too: docs/PERFORMANCE.md)",
)


def quick_run(plan: Plan) -> str:
    """What ``plan`` shortens against :meth:`Plan.full` that capacities and goodput depend on
    (the run length and the outputs); empty for the full plan."""
    full = Plan.full().setup
    cut = []
    if plan.setup.duration_s < full.duration_s:
        cut.append(f"{plan.setup.duration_s:g} s runs (full: {full.duration_s:g} s)")
    if plan.setup.mean_output_tokens < full.mean_output_tokens:
        cut.append(
            f"outputs of {plan.setup.mean_output_tokens} tokens on average "
            f"(full: {full.mean_output_tokens})"
        )
    return ", ".join(cut)


def _ratio_verdicts(
    ours: tuple[float | None, float | None], paper: tuple[float, float]
) -> tuple[bool, str, tuple[bool, bool]]:
    """Whether WISP/centralized and WISP/SLED both lie within tolerance of the paper's, a
    note saying which does, and each ratio's verdict."""
    cent, sled = (
        o is not None and within(o, p, RATIO_TOLERANCE) for o, p in zip(ours, paper, strict=True)
    )
    note = ", ".join(
        f"{name} {'within' if ok else 'outside'} ±25%"
        for name, ok in (("WISP/centralized", cent), ("WISP/SLED", sled))
    )
    return cent and sled, note, (cent, sled)


def _ratio_reason(each: tuple[bool, bool], centralized: Reason | None) -> Reason | None:
    """The known cause of the ratios that miss, the order being right: SLED's recomputation
    for WISP/SLED, ``centralized`` (``None``: not known) for WISP/centralized."""
    cent_ok, sled_ok = each
    if sled_ok:
        return None if cent_ok else centralized
    if cent_ok:
        return SLED_RECOMPUTES
    other = "cause not known" if centralized is None else str(centralized)
    return Reason(
        SLED_RECOMPUTES.cause, f"WISP/SLED: {SLED_RECOMPUTES.line}; WISP/centralized: {other}"
    )


def _ratio(a: int | None, b: int | None) -> float | None:
    return None if a is None or b is None or b == 0 else a / b


def capacity_rows(res: WispResults, target: str, claim_id: str) -> list[ClaimRow]:
    rows = []
    stand_in = " (14B: scaled Table 12 stand-in)" if target == "qwen3-14b" else ""
    quick = quick_run(res.plan)
    gaps = []
    for cls in res.plan.classes:
        i = CLASS_INDEX[cls]
        paper = [TABLE_2[(s, target)][i] for s in ("wisp", "centralized", "sled")]
        ours = [res.capacities[(s, target, cls)] for s in ("wisp", "centralized", "sled")]
        pr = (paper[0] / paper[1], paper[0] / paper[2])
        our = (_ratio(ours[0], ours[1]), _ratio(ours[0], ours[2]))
        gaps.append(our[0])
        order = all(v is not None for v in ours) and ours[0] > ours[1] > ours[2]  # type: ignore[operator]
        close, note, each = _ratio_verdicts(our, pr)
        centralized = QWEN3_14B if stand_in else (TWO_TOK_CONTEXT if cls == "c2" else None)
        rows.append(
            ClaimRow(
                claim_id,
                f"capacity at {CLASSES[cls]:g} tok/s, {target}: WISP / centralized / SLED"
                + stand_in,
                f"{paper[0]} / {paper[1]} / {paper[2]} ({pr[0]:.2f}×, {pr[1]:.2f}×)",
                " / ".join(fmt(v, "d") if v is not None else "none" for v in ours)
                + f" ({fmt(our[0], '.2f')}×, {fmt(our[1], '.2f')}×)",
                "order; ratios ±25%",
                order,
                close,
                note,
                _ratio_reason(each, centralized) if order else None,
                quick,
            )
        )
    if len(gaps) > 1:
        widening = gaps[0] is not None and gaps[-1] is not None and gaps[-1] > gaps[0]
        rows.append(
            ClaimRow(
                claim_id,
                f"WISP/centralized gap widens with τ ({target})",
                "1.69× → 2.10×" if target == "qwen3-32b" else "1.24× → 1.79×",
                " → ".join(fmt(g, ".2f") for g in gaps),
                "direction",
                widening,
                None,
                reason=QWEN3_14B if stand_in else GAP_FLAT,
            )
        )
    return rows


def goodput_row(res: WispResults) -> ClaimRow:
    g, t = res.goodput, TABLE_3
    pr = (t["wisp"] / t["centralized"], t["wisp"] / t["sled"])
    our = (g["wisp"] / g["centralized"], g["wisp"] / g["sled"])
    close, note, each = _ratio_verdicts(our, pr)
    order = g["wisp"] > g["centralized"] > g["sled"]
    return ClaimRow(
        "W3",
        f"goodput (tok/s), {res.plan.goodput_devices} devices, mixed classes: "
        "WISP / centralized / SLED",
        f"{t['wisp']} / {t['centralized']} / {t['sled']} ({pr[0]:.2f}×, {pr[1]:.2f}×)",
        f"{g['wisp']:.0f} / {g['centralized']:.0f} / {g['sled']:.0f} "
        f"({our[0]:.2f}×, {our[1]:.2f}×)",
        "order; ratios ±25%",
        order,
        close,
        note,
        _ratio_reason(each, None) if order else None,
        quick_run(res.plan),
    )


def curve_rows(res: WispResults) -> list[ClaimRow]:
    n_star = operating_point(res.curves)
    if n_star is None:
        return [
            ClaimRow(
                "W4",
                "FCFS reaches 36% violations at 4 tok/s",
                "yes",
                "not in the swept range",
                "direction",
                False,
                None,
            )
        ]
    viol = {
        s: {c: class_violation(c)(res.curves[(s, n_star)]) for c in CLASSES}
        for s in ("wisp", "fcfs")
    }

    def pct(system: str, table: dict[str, dict[str, float]]) -> str:
        return " / ".join(f"{100 * table[system][c]:.1f}%" for c in ("c8", "c6", "c4", "c2"))

    rows = [
        ClaimRow(
            "W4",
            f"violations 8/6/4/2 tok/s at N = {n_star} (FCFS first ≥ 36% at 4 tok/s): "
            "WISP vs FCFS; WISP ≤ ½ FCFS at 4 tok/s, below FCFS at 6",
            f"WISP {pct('wisp', TABLE_1)} vs FCFS {pct('fcfs', TABLE_1)}",
            f"WISP {pct('wisp', viol)} vs FCFS {pct('fcfs', viol)}",
            "direction",
            viol["wisp"]["c4"] <= 0.5 * viol["fcfs"]["c4"]
            and viol["wisp"]["c6"] < viol["fcfs"]["c6"],
            None,
            reason=ALGORITHM_1_TRADES,
        ),
        ClaimRow(
            "W4",
            "2 tok/s class ≈ 0 for both at that N",
            "0.00% / 0.00%",
            f"{100 * viol['wisp']['c2']:.1f}% / {100 * viol['fcfs']['c2']:.1f}%",
            "≤ 5%",
            max(viol["wisp"]["c2"], viol["fcfs"]["c2"]) <= 0.05,
            None,
            reason=ALGORITHM_1_TRADES,
        ),
    ]
    eps = res.plan.setup.epsilon
    for cls in ("c4", "c6"):
        knee_w = knee_devices(res.curves, "wisp", cls, eps)
        knee_f = knee_devices(res.curves, "fcfs", cls, eps)
        rows.append(
            ClaimRow(
                "W4",
                f"knee (first N with {100 * eps:g}% violations or more) at {CLASSES[cls]:g} tok/s: "
                "WISP vs FCFS",
                "shifts right",
                f"{knee_w or 'beyond range'} vs {knee_f or 'beyond range'}",
                "direction",
                knee_f is not None and (knee_w is None or knee_w > knee_f),
                None,
                reason=ALGORITHM_1_TRADES,
            )
        )
    return rows


def attribution_row(res: WispResults) -> ClaimRow:
    att = res.attribution
    share = None if att is None else att.compute_share
    detail = "" if att is None else f" ({att.num_compute_dominant} of {att.num_violated})"
    return ClaimRow(
        "W5",
        f"violated WISP rounds with ρ > 1.5 (compute spikes), N = {res.attribution_devices}",
        "most",
        ("no violations" if share is None else f"{100 * share:.1f}%") + detail,
        "> 50%",
        share is not None and share > 0.5,
        None,
        reason=DETERMINISTIC_VERIFIER,
    )


def all_rows(res: WispResults) -> list[ClaimRow]:
    rows = capacity_rows(res, "qwen3-32b", "W1")
    if "qwen3-14b" in res.plan.targets:
        rows += capacity_rows(res, "qwen3-14b", "W2")
    return [*rows, goodput_row(res), *curve_rows(res), attribution_row(res)]
