"""Why each DSD claim misses, per cost mode: one :class:`~edgespec.reproduce.claims.Reason`
(a cause class and one line) per claim family, stated once here and used by
:mod:`edgespec.reproduce.dsd.claims` and :mod:`edgespec.reproduce.dsd.sweep_claims`
(docs/REPRODUCE.md, the DSD section's Findings, explains them). Table 2's absolute
throughput rows get a cause per cell from Little's law under the fitted think time
(:func:`table_throughput_reason`)."""

from __future__ import annotations

from dataclasses import dataclass

from edgespec.reproduce.claims import Cause, Reason
from edgespec.reproduce.dsd.load import (
    FIT_CELL,
    LENGTH_TABLES,
    cell_conversation_s,
    fitted_think_s,
    mean_output_tokens,
)
from edgespec.reproduce.dsd.paper import PAPER_TABLE2, TABLE_CONFIGS
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
    "faster, and its gains differ from the paper's cell by cell"
)
PROFILES = (
    "DSD's VIDUR profiles and per-pair acceptance (not given): on the roofline presets a "
    "4-GPU 70B pass costs 19.1 / 27.8 / 69.2 ms (4×H100 / 4×A100 / 4×A6000) and a 7–8B "
    "draft token 23.6–35.0 ms; the acceptance is the bundled Gemma pair's"
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
        "DSD's VIDUR profiles: on the 4-GPU servers round-robin's imbalance costs a fraction "
        "of a fast pass, so its gap to JSQ is narrow and the fleet never saturates",
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
    awc=Reason(
        Cause.SIMPLIFICATION,
        "DSD-Sim's fused rounds skip the target's queue (fused_execute): AWC's cloud-only "
        "rounds pay off where the targets are saturated and lose where they are not; " + WC_DNN,
    ),
    table_ttft=PHYSICAL.table_ttft,
    table_tpot=PHYSICAL.table_tpot,
    routing=PHYSICAL.routing,
    batching=PHYSICAL.batching,
)
UNSATURATED = Reason(
    Cause.MISSING_INPUT,
    "the load (not given): with the think time fitted to Table 2's GSM8K C1 the 4-GPU "
    "fleet does not saturate within the swept draft counts",
)
"""D7's throughput row where the sweep's largest draft count does not saturate."""
TP1_CROSSOVER = Reason(
    Cause.SIMPLIFICATION,
    "DSD-Sim's TP-1 targets (its shipped configurations, not the paper's 4-GPU servers): a "
    "70B pass costs 63.9 / 98.7 / 264.6 ms (H100 / A100 / A6000), so a cloud-only token, one "
    "pass each, costs more than a distributed round's network at every swept RTT",
)
"""D3 on the named variant fleet, in both cost modes."""
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
gives for its own TTFT and TPOT (under the fitted think time) is inconsistent with the
fitted cell."""


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
    the length table does not have), or Table 2 itself (its printed numbers, under the
    think time fitted to :data:`FIT_CELL`, break Little's law)."""
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
            Cause.INCONSISTENT,
            f"Little's law over Table 2's own numbers: with the think time fitted to "
            f"{FIT_CELL[0]} {FIT_CELL[1]}, this cell's printed TTFT and TPOT give "
            f"{implied:.1f} req/s, the printed {printed:g} is {printed / implied - 1:+.0%} "
            "from it",
        )
    return PHYSICAL.absolute
