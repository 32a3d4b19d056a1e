"""Why each DSD claim misses, per cost mode: one :class:`~edgespec.reproduce.claims.Reason`
(a cause class and one line) per claim family, stated once here and used by
:mod:`edgespec.reproduce.dsd.claims`, :mod:`edgespec.reproduce.dsd.stack_claims` and
:mod:`edgespec.reproduce.dsd.sweep_claims` (docs/REPRODUCE.md, the DSD section's Findings,
explains them). Where the runs show which policy moves a number out (a step of Fig. 5's
chain, a window policy's Table 2 cell beside Static's on the same profiles), the cause
names that policy instead (:func:`policies_reason`). Table 2's absolute throughput rows
get a cause per cell from Little's law under the fitted think time
(:func:`table_throughput_reason`), and D6's catch-up row one from the run's routing gaps
(:func:`catch_up_reason`). The load the paper does not give is the one class
everywhere it is the cause: an input the paper does not give."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from edgespec.reproduce.claims import Cause, Reason, pct, within
from edgespec.reproduce.dsd.load import (
    FIT_CELL,
    LENGTH_TABLES,
    cell_conversation_s,
    closed_loop_gain,
    fitted_think_s,
    mean_output_tokens,
)
from edgespec.reproduce.dsd.paper import PAPER_STACKS, PAPER_TABLE2, TABLE_CONFIGS
from edgespec.reproduce.dsd.setup import CostMode


@dataclass(frozen=True, slots=True)
class DsdCauses:
    """One cost mode's causes, by claim family."""

    stack_gain: Reason
    stack_tpot: Reason
    stack_ttft: Reason
    absolute: Reason
    crossover: Reason
    awc: Reason
    table_ttft: Reason
    table_tpot: Reason
    routing: Reason
    batching: Reason


WC_DNN = (
    "the paper's WC-DNN and its training data (not published): edgespec's WC-DNN, trained "
    "on its own grid of the same 4-GPU fleet, goes cloud-only where its grid found that "
    "faster, and its gains differ from the paper's cell by cell; its grid's runs are 20 s "
    "of Poisson arrivals or DSD-Sim's closed loop (1.7 s think time), not the judged runs' "
    "120 s at the fitted 17.42 s think time, so how much of the miss is the missing model "
    "and how much that training is not told apart"
)
PROFILES = (
    "DSD's VIDUR profiles and per-pair acceptance (not given): on the roofline presets a "
    "4-GPU 70B pass costs 19.1 / 27.8 / 69.2 ms (4×H100 / 4×A100 / 4×A6000) and a 7–8B "
    "draft token 23.6–35.0 ms; the acceptance is the bundled Gemma pair's"
)
DYNAMIC_RULE = (
    "the Dynamic rule's start and bounds (not given: here γ starts at 4, +1 above 0.75 "
    "recent acceptance, −1 below 0.25, within [1, 8])"
)
ROUTING_GAIN = (
    "DSD's VIDUR profiles (not given): what JSQ saves over random routing is the imbalance "
    "of the targets' queues, a fraction of a pass on the 4-GPU servers"
)
LAB_RULE = (
    "LAB's grouping rule (not given: here a batch takes the head-of-line request and the "
    "queued requests within 1.5× of its length); every run prices padded batches "
    "(each row pays the batch's longest cached context and longest new block), so LAB "
    "saves padding where batches are large (many drafts), but with fewer drafts a batch "
    "averages under two requests and the bound mostly shrinks batches; a first "
    "verification, which carries its prompt, pads its companions' new blocks whatever "
    "their context lengths"
)
POLICIES: dict[str, tuple[str, str]] = {
    "s1": ("JSQ", ROUTING_GAIN),
    "s2": ("LAB", LAB_RULE),
    "s3": ("Dynamic", DYNAMIC_RULE),
    "s4": ("AWC", WC_DNN),
}
"""What each of Fig. 5's stacks adds to the one before (Table 2's Dynamic and AWC columns
are S3's and S4's windows), and why its effect here is not the paper's."""
STACK_NAMES: dict[str, str] = {"default": "Default", "s1": "S1", "s2": "S2", "s3": "S3", "s4": "S4"}


def step_label(before: str, after: str) -> str:
    """``S3 → S4 (adds AWC)``: a step of Fig. 5's chain, named by the policy it adds."""
    return f"{STACK_NAMES[before]} → {STACK_NAMES[after]} (adds {POLICIES[after][0]})"


def policies_reason(steps: Sequence[tuple[str, str]], effect: str, then: str = "") -> Reason:
    """Why a number misses where the runs show which policies move it: each step (what
    moved it, the stack whose policy it adds) with ``effect`` (what it does to the number)
    and why that policy's effect here is not the paper's; ``then``: a further clause (the
    cause of the row's other verdict)."""
    parts = [f"{label} {effect}: {POLICIES[stack][1]}" for label, stack in steps]
    return Reason(Cause.MISSING_INPUT, "; ".join(parts) + (f"; {then}" if then else ""))


def window_cells_reason(
    family: Reason, ours: Sequence[float | None], paper: Sequence[float], tolerance: float
) -> Reason:
    """Why a Table 2 latency row (Static / Dynamic / AWC) misses: where Static's cell lies
    within ``tolerance`` of the paper's, the same profiles do, and the window policies whose
    cells lie beyond it are the cause; else ``family`` (the profiles)."""
    values = [o for o in ours if o is not None]
    if len(values) != len(ours) or not within(values[0], paper[0], tolerance):
        return family
    out = [
        stack
        for stack, o, p in zip(("s3", "s4"), values[1:], paper[1:], strict=True)
        if not within(o, p, tolerance)
    ]
    if not out:
        return family
    steps = [(f"{POLICIES[stack][0]}'s cell", stack) for stack in out]
    return policies_reason(
        steps, f"lies beyond ±{tolerance:.0%} where Static's, on the same profiles, lies within"
    )


def stack_gain_note(default_ms: tuple[float, float] | None, relative: float) -> str:
    """Why D2's throughput gain is shown and not judged: under the load chosen for the one
    the paper does not give, throughput follows from the latencies the TTFT and TPOT rows
    judge (Little's law), and Fig. 5's own latencies give a gain far below its printed one.
    ``default_ms``: our Default's (TTFT from arrival, per-request TPOT), ms, where the TPOT
    row judges the per-request TPOT (physical): the most gain this run's Default leaves to a
    TPOT within ``relative`` of the paper's cut, beside the least ``relative`` of the
    paper's gain allows (a bound of this run's, not of the construction: a slower Default
    leaves more)."""
    (thr_0, ttft_0, tpot_0), (thr_4, ttft_4, tpot_4) = PAPER_STACKS["default"], PAPER_STACKS["s4"]
    gain, cut = thr_4 / thr_0 - 1.0, tpot_4 / tpot_0 - 1.0
    implied = closed_loop_gain((ttft_0, tpot_0), (ttft_4, tpot_4))
    text = (
        f"the gain's size is shown, not judged: {LOAD} makes throughput N / (Z + TTFT + "
        f"TPOT·(L − 1)) (Little's law; Z = {fitted_think_s():.2f} s, L = "
        f"{mean_output_tokens(FIT_CELL[0]):.2f} tokens), so the gain follows from the "
        f"latencies the TTFT and TPOT rows judge. Fig. 5's own TTFT and TPOT ({ttft_0:g} → "
        f"{ttft_4:g} ms, {tpot_0:g} → {tpot_4:g} ms) give {pct(implied)}, not {pct(gain)}: "
        "under this load the paper's printed throughput gain does not follow from its "
        "printed latencies"
    )
    if default_ms is None:
        return text
    floor = default_ms[1] * (1.0 + cut * (1.0 + relative))
    most, least = closed_loop_gain(default_ms, (0.0, floor)), gain * (1.0 - relative)
    return text + (
        f"; in this run, from our Default ({default_ms[0]:.0f} ms, {default_ms[1]:.1f} ms), a "
        f"TPOT within ±{relative:.0%} of {pct(cut)} (≥ {floor:.1f} ms) leaves at most "
        f"{pct(most)} even at zero TTFT, {'below' if most < least else 'not below'} the "
        f"{pct(least)} that ±{relative:.0%} of {pct(gain)} needs"
    )


PHYSICAL = DsdCauses(
    stack_gain=Reason(Cause.MISSING_INPUT, LAB_RULE + "; " + WC_DNN),
    stack_tpot=Reason(Cause.MISSING_INPUT, LAB_RULE + "; " + WC_DNN),
    stack_ttft=Reason(Cause.MISSING_INPUT, PROFILES),
    absolute=Reason(Cause.MISSING_INPUT, PROFILES),
    crossover=Reason(
        Cause.SIMPLIFICATION,
        "DSD-Sim's fused rounds bypass the target's queue and batches (fused_execute); here "
        "a cloud-only round queues and batches with the target's others and commits one "
        "token per pass (the compat rows run it unqueued)",
    ),
    awc=Reason(Cause.MISSING_INPUT, WC_DNN),
    table_ttft=Reason(
        Cause.MISSING_INPUT, PROFILES + "; CNN/DailyMail's lengths (the ShareGPT table stands in)"
    ),
    table_tpot=Reason(Cause.MISSING_INPUT, PROFILES),
    routing=Reason(
        Cause.MISSING_INPUT,
        "DSD's VIDUR profiles: below 1,000 drafts round-robin's imbalance costs a fraction of "
        "a 4-GPU server's fast pass, so its gap to JSQ is narrow there",
    ),
    batching=Reason(Cause.MISSING_INPUT, LAB_RULE),
)
COMPAT = DsdCauses(
    stack_gain=PHYSICAL.stack_gain,
    stack_tpot=PHYSICAL.stack_tpot,
    stack_ttft=PHYSICAL.stack_ttft,
    absolute=PHYSICAL.absolute,
    crossover=Reason(
        Cause.MISSING_INPUT,
        "DSD's VIDUR profiles: the crossover is the RTT at which a round's network time "
        "outweighs a cloud-only token's draft and target passes, set by the pass times",
    ),
    awc=PHYSICAL.awc,
    table_ttft=PHYSICAL.table_ttft,
    table_tpot=PHYSICAL.table_tpot,
    routing=PHYSICAL.routing,
    batching=PHYSICAL.batching,
)
LOAD = (
    "the load (not given: a closed loop is chosen, its one think time fitted to Table 2's "
    "GSM8K C1 Static cell)"
)
UNSATURATED = Reason(
    Cause.MISSING_INPUT,
    f"{LOAD}: with that think time the 4-GPU fleet does not saturate within the swept draft counts",
)
"""D7's throughput row where the sweep's largest draft count does not saturate."""


def catch_up_reason(
    gaps: Sequence[tuple[int, float]], top: tuple[int, int, float] | None
) -> Reason:
    """D6's catch-up row: where round-robin catches up with JSQ is where the fleet saturates,
    which the load (not given) decides. ``gaps``: RR's TPOT minus JSQ's (ms) by draft count;
    ``top``: the two largest counts and JSQ's throughput growth between them."""
    caught = next((n for n, gap in gaps if gap <= 0), None)
    if caught is not None or not gaps:
        moved = "no gap measured" if caught is None else f"RR catches up at {caught} drafts"
    else:
        (first_n, first), (last_n, last) = gaps[0], gaps[-1]
        peak_n, peak = max(gaps, key=lambda g: g[1])
        moved = (
            f"RR never catches up: its TPOT gap to JSQ grows from {first:+.1f} ms at {first_n} "
            f"drafts to {peak:+.1f} ms at {peak_n}"
            + ("" if peak_n == last_n else f" ({last:+.1f} ms at {last_n})")
        )
    grows = (
        ""
        if top is None
        else f"; JSQ's throughput grows {pct(top[2])} from {top[0]} to {top[1]} drafts"
    )
    return Reason(
        Cause.MISSING_INPUT,
        f"{moved}: round-robin gives every target the same share, the 4×A6000 servers (69.2 ms "
        "a pass) as many requests as the 4×H100 ones (19.1 ms), and JSQ's balancing pays until "
        f"the whole fleet saturates, a point {LOAD} decides{grows}",
    )


FRAGILE_AWC = (
    "fragile: DSD-Sim's fused rounds skip the target's queue (fused_execute), so where the "
    "targets are over-saturated a cloud-only round jumps the batch every distributed round "
    "waits for; the physical row runs the same WC-DNN with queued fused rounds"
)
"""The note of a compat-mode AWC row (D4/D5): what its outcome rests on."""
CAUSES: dict[CostMode, DsdCauses] = {"physical": PHYSICAL, "dsdsim_compat": COMPAT}
MODE_TAGS: dict[CostMode, str] = {"physical": "physical", "dsdsim_compat": "DSD-Sim compat"}
"""How a row names its cost mode (``[physical] …``, ``[DSD-Sim compat] …``)."""


def tagged(mode: CostMode, what: str) -> str:
    return f"[{MODE_TAGS[mode]}] {what}"


INCONSISTENT_GAP = 0.25
"""A Table 2 cell whose printed throughput is more than this far from what Little's law
gives for its own TTFT and TPOT (under the fitted think time) does not fit a closed loop
with the fitted cell's think time."""


def required_output_tokens(dataset: str, config: str) -> float:
    """The mean answer length Little's law needs for the cell's printed Static throughput,
    TTFT and TPOT under the fitted think time: L = 1 + (N / X − Z − TTFT) / TPOT."""
    drafts, _ = TABLE_CONFIGS[config]
    printed = PAPER_TABLE2[(dataset, config)]
    in_system_s = drafts / printed["thr"][0] - fitted_think_s()
    return 1.0 + (in_system_s - printed["ttft"][0] / 1e3) / (printed["tpot"][0] / 1e3)


def table_throughput_reason(dataset: str, config: str) -> Reason:
    """Why a Table 2 throughput cell misses: the fitted cell's own inputs (profiles), the
    dataset's answer lengths (HumanEval, CNN/DailyMail: Little's law needs a mean length
    the length table does not have), or the load (its printed numbers, under the think
    time fitted to :data:`FIT_CELL`, break Little's law: one closed loop does not fit
    both)."""
    drafts, _ = TABLE_CONFIGS[config]
    printed = PAPER_TABLE2[(dataset, config)]["thr"][0]
    implied = drafts / (fitted_think_s() + cell_conversation_s(dataset, config))
    need, have = required_output_tokens(dataset, config), mean_output_tokens(dataset)
    if dataset != FIT_CELL[0]:
        return Reason(
            Cause.MISSING_INPUT,
            f"the answer lengths (not given): Little's law with the fitted think time needs "
            f"{need:.0f}-token answers for this cell's printed throughput, TTFT and TPOT; the "
            f"{LENGTH_TABLES[dataset]} length table's mean is {have:.0f}",
        )
    if abs(printed / implied - 1.0) > INCONSISTENT_GAP:
        return Reason(
            Cause.MISSING_INPUT,
            f"{LOAD}: Little's law with that think time turns this cell's printed TTFT and "
            f"TPOT into {implied:.1f} req/s, and the printed {printed:g} is "
            f"{printed / implied - 1:+.0%} from it: no one think time fits this cell and "
            f"{FIT_CELL[0]} {FIT_CELL[1]} both",
        )
    return PHYSICAL.absolute
