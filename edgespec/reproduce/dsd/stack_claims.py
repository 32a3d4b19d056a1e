"""DSD's D2 (Fig. 5: the policy stacks Default → S1 → S2 → S3 → S4 on GSM8K, 600 drafts,
RTT 10 ms) as :class:`ClaimRow` s; the other claims are :mod:`edgespec.reproduce.dsd.claims`'.

The throughput and TPOT chains are judged as chains (each step one way, within
:data:`CHAIN_TOLERANCE`). The throughput gain's size is shown and not judged: under the
closed loop chosen for the load the paper does not give, throughput follows from the
latencies the other rows judge (:func:`~edgespec.reproduce.dsd.causes.stack_gain_note`).
Where a row misses because a step moves the number the wrong way (or out of the
tolerance), its cause names the policy that step adds
(:func:`~edgespec.reproduce.dsd.causes.policies_reason`); else the claim family's.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise

from edgespec.reproduce.claims import ClaimRow, Reason, change, fmt, pct, within
from edgespec.reproduce.dsd.causes import (
    CAUSES,
    policies_reason,
    stack_gain_note,
    step_label,
    tagged,
)
from edgespec.reproduce.dsd.load import FITTED_THROUGHPUT
from edgespec.reproduce.dsd.paper import ABSOLUTE, PAPER_STACKS, RELATIVE
from edgespec.reproduce.dsd.runs import DsdResults, stack_name
from edgespec.reproduce.dsd.setup import STACKS
from edgespec.reproduce.dsd.summary import DsdRunSummary, summary_metric
from edgespec.reproduce.dsd.sweep_claims import padded, quick_run

LAB_LINK = ("s1", "s2")
"""The link of Fig. 5's chain that adds LAB. Under summed batch pricing a batch costs its
summed tokens, so grouping by length saves no padding: this link cannot improve by
construction, and the chains are judged over the others (each shown, the LAB link marked
⇢). Under padded pricing (``DsdSetup.batch_pricing``, the setting) every link is judged."""
CHAIN_TOLERANCE = 0.01
"""A chain step within 1% of flat counts as not reversing it (run-to-run noise: the chain's
five full-size runs at seeds 4–11 move a step's change by a standard deviation of 0.5–0.9
points in throughput and 0.2–0.9 in TPOT, physical; 0.7–1.0 and 0.2–1.5 in compat at seeds
4–6, docs/REPRODUCE.md)."""
Step = tuple[str, str]


def _links(values: list[float | None]) -> list[tuple[Step, float | None, float | None]]:
    names = list(STACKS)
    return [((a, b), x, y) for (a, x), (b, y) in pairwise(zip(names, values, strict=True))]


def chain_holds(values: list[float | None], rising: bool, skip_lab: bool = False) -> bool:
    """Fig. 5's chain Default → S4 moves one way (``rising``: each step up, else down, by
    more than −:data:`CHAIN_TOLERANCE`) over every link (``skip_lab``: but
    :data:`LAB_LINK`)."""
    for link, a, b in _links(values):
        if skip_lab and link == LAB_LINK:
            continue
        step = change(b, a)
        if step is None or (step if rising else -step) < -CHAIN_TOLERANCE:
            return False
    return True


def reversing_steps(values: list[float | None], rising: bool, skip_lab: bool) -> list[Step]:
    """The links that move the chain the wrong way by more than :data:`CHAIN_TOLERANCE`
    (``skip_lab``: :data:`LAB_LINK` aside); a link with a missing end is none of them."""
    return [
        link
        for link, a, b in _links(values)
        if not (skip_lab and link == LAB_LINK)
        and (step := change(b, a)) is not None
        and (step if rising else -step) < -CHAIN_TOLERANCE
    ]


def leaving_steps(values: list[float | None], inside: Callable[[float], bool]) -> list[Step]:
    """The links at which the chain goes from a value ``inside`` to one that is not."""
    return [
        link
        for link, a, b in _links(values)
        if a is not None and b is not None and inside(a) and not inside(b)
    ]


def _steps_reason(steps: list[Step], effect: str, family: Reason, then: str = "") -> Reason:
    """The policies of ``steps`` as the cause, or ``family`` where no step is to blame."""
    if not steps:
        return family
    return policies_reason([(step_label(*s), s[1]) for s in steps], effect, then)


def _chain_text(values: list[float | None], spec: str, skip_lab: bool) -> str:
    parts = [fmt(values[0], spec)]
    for link, _, b in _links(values):
        lab = skip_lab and link == LAB_LINK
        parts.append(("⇢ " if lab else "→ ") + fmt(b, spec))
    return " ".join(parts)


def _default_ms(res: DsdResults, default: DsdRunSummary | None) -> tuple[float, float] | None:
    """Our Default's (TTFT from arrival, per-request TPOT) where the TPOT row judges the
    per-request TPOT (physical); ``None`` in compat mode, without the run, and in a quick
    run (its magnitudes are not compared: no bound is drawn from them)."""
    if res.plan.setup.compat or default is None or quick_run(res):
        return None
    ttft, tpot = default.ttft_from_arrival_ms, default.request_tpot_ms
    return None if ttft is None or tpot is None else (ttft, tpot)


def _ttft_row(res: DsdResults, got: dict[str, DsdRunSummary | None]) -> ClaimRow:
    """TTFT Default → S4: S4 at most Default's; each within ±50% of Fig. 5's. A direction
    miss names the steps that take TTFT above Default's; a magnitude miss is the
    profiles'."""
    ttft = [summary_metric(s, "ttft") for s in got.values()]
    waited = [None if s is None else s.ttft_from_arrival_ms for s in got.values()]
    first, last = ttft[0], ttft[-1]
    direction = first is not None and last is not None and last <= first
    magnitude = (
        first is not None
        and last is not None
        and within(first, PAPER_STACKS["default"][1], ABSOLUTE)
        and within(last, PAPER_STACKS["s4"][1], ABSOLUTE)
    )
    family = CAUSES[res.cost_mode].stack_ttft
    above = [] if direction or first is None else leaving_steps(ttft, lambda v: v <= first)
    then = "" if magnitude else f"the values beyond ±50% of Fig. 5's: {family.line}"
    reason = _steps_reason(above, "takes TTFT above Default's", family, then)
    return ClaimRow(
        "D2", tagged(res.cost_mode, "TTFT Default → S4 (from the draft's start, as DSD-Sim)"),
        "351 → 345 ms",
        " → ".join(fmt(t, ".0f") for t in ttft) + " ms (from arrival: "
        + " → ".join(fmt(t, ".0f") for t in waited) + " ms)",
        "S4 ≤ Default; each within ±50%", direction, magnitude,
        reason=reason, quick_run=quick_run(res),
    )  # fmt: skip


def _absolute_row(res: DsdResults, stack: str, tpot: list[float | None]) -> ClaimRow:
    """One stack's throughput (shown: the fitted think time's) and TPOT (judged, ±50%). S4's
    miss names the steps that take TPOT out of the tolerance where the chain was inside
    it; else the profiles'."""
    p_thr, _, p_tpot = PAPER_STACKS[stack]
    s = res.get(stack_name(stack))
    ok = s is not None and s.tpot_ms is not None and within(s.tpot_ms, p_tpot, ABSOLUTE)
    family = CAUSES[res.cost_mode].absolute
    steps = [] if ok or stack == "default" else leaving_steps(
        tpot, lambda v: within(v, p_tpot, ABSOLUTE)
    )  # fmt: skip
    return ClaimRow(
        "D2", tagged(res.cost_mode, f"{stack}: throughput, TPOT (absolute)"),
        f"{p_thr} req/s, {p_tpot:g} ms",
        f"{fmt(summary_metric(s, 'thr'), '.2f')} req/s, {fmt(summary_metric(s, 'tpot'), '.1f')} ms",
        "TPOT ±50% (throughput: " + FITTED_THROUGHPUT + ")", None, ok,
        reason=_steps_reason(steps, f"takes TPOT beyond ±50% of {p_tpot:g} ms", family),
        quick_run=quick_run(res),
    )  # fmt: skip


def stack_rows(res: DsdResults) -> list[ClaimRow]:
    """D2: Fig. 5's stacks, Default → S4 on GSM8K at 600 drafts, RTT 10 ms; the chains
    judged as chains (:func:`chain_holds`), the LAB link (⇢) not judged under summed
    pricing; the gain's size shown (:func:`~edgespec.reproduce.dsd.causes.stack_gain_note`);
    the absolute rows judge TPOT (their throughput is the fitted think time's,
    :data:`~edgespec.reproduce.dsd.load.FITTED_THROUGHPUT`)."""
    got = {s: res.get(stack_name(s)) for s in STACKS}
    thr = [summary_metric(got[s], "thr") for s in STACKS]
    tpot = [summary_metric(got[s], "tpot") for s in STACKS]
    skip = not padded(res)  # summed pricing: the LAB link is not judged
    quick, why, mode = quick_run(res), CAUSES[res.cost_mode], res.cost_mode
    gain, paper_gain = change(thr[-1], thr[0]), 28.1 / 25.1 - 1.0
    cut, paper_cut = change(tpot[-1], tpot[0]), 37.0 / 45.0 - 1.0
    lab = " but LAB's (⇢, not judged: no padding to save)" if skip else ""
    return [
        ClaimRow(
            "D2", tagged(mode, "throughput gain Default → S4 (GSM8K, 600 drafts, 10 ms)"),
            f"25.1 → 28.1 req/s ({pct(paper_gain)})",
            f"{_chain_text(thr, '.2f', skip)} ({pct(gain)})",
            f"gain > 0 and the chain rises at every link{lab}; the gain's size shown, not "
            "judged (note)",
            gain is not None and gain > 0 and chain_holds(thr, rising=True, skip_lab=skip),
            None, stack_gain_note(_default_ms(res, got["default"]), RELATIVE),
            _steps_reason(reversing_steps(thr, True, skip), "lowers throughput",
                          why.stack_gain),
            quick,
        ),
        ClaimRow(
            "D2", tagged(mode, "TPOT change Default → S4"), f"45 → 37 ms ({pct(paper_cut)})",
            _chain_text(tpot, ".1f", skip) + f" ms ({pct(cut)})",
            "TPOT falls and the chain falls at every link" + (" but LAB's (⇢)" if skip else "")
            + "; ±25% of −17.8%",
            cut is not None and cut < 0 and chain_holds(tpot, rising=False, skip_lab=skip),
            cut is not None and within(cut, paper_cut, RELATIVE),
            reason=_steps_reason(reversing_steps(tpot, False, skip), "raises TPOT",
                                 why.stack_tpot),
            quick_run=quick,
        ),
        _ttft_row(res, got),
        *[_absolute_row(res, stack, tpot) for stack in PAPER_STACKS],
    ]  # fmt: skip
