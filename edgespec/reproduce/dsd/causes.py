"""Why each DSD claim misses, per cost mode: one :class:`~edgespec.reproduce.claims.Reason`
(a cause class and one line) per claim family, stated once here and used by
:mod:`edgespec.reproduce.dsd.claims` and :mod:`edgespec.reproduce.dsd.sweep_claims`
(docs/REPRODUCE.md, "Why the misses", explains each at length)."""

from __future__ import annotations

from dataclasses import dataclass

from edgespec.reproduce.claims import Cause, Reason
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


LITTLE = (
    "Table 2's own numbers break Little's law for closed-loop drafts with DSD-Sim's 1.7 s "
    "think time: C1 GSM8K (600 drafts, 25.8 requests/s) leaves 600 / 25.8 − 1.7 − 0.35 = "
    "21.2 s per conversation after its first token, 155 ms per token of GSM8K's 138-token "
    "mean answer (DSD-Sim's trace), not the 40 ms printed; HumanEval's and CNN/DailyMail's "
    "rows imply 35 s and 73 s conversations. Throughput and TPOT cannot both match"
)
"""Little's law over Table 2 (the load model's own arithmetic)."""

QUEUED_FUSED = (
    "DSD-Sim's fused rounds skip the target's queue and batches (fused_execute) and its "
    "drafting costs one pass a round: with those simplifications (the DSD-Sim compat rows) "
    "AWC's cloud-only rounds pay off; with physical costs a cloud-only round waits behind "
    "the saturated TP-1 target's batches for a whole 70B pass per token"
)
WC_DNN = (
    "the paper's WC-DNN and its training data (not published): edgespec's WC-DNN, trained "
    "on its own grid, goes cloud-only where its grid found that faster, and its gains differ "
    "from the paper's cell by cell"
)
PROFILES = (
    "DSD's VIDUR profiles: on the roofline presets a TP-1 70B pass costs 64 / 99 / 265 ms "
    "(H100 / A100 / A6000) and a 7–8B draft token 23.6–35.0 ms, so a request's first round "
    "waits for a saturated target"
)
PHYSICAL = DsdCauses(
    stack_gain=Reason(
        Cause.MISSING_INPUT,
        "LAB's grouping rule and the paper's WC-DNN (not "
        "given): JSQ gains most on saturated targets, then LAB's waits and AWC's "
        "cloud-only rounds give part of it back; " + WC_DNN,
    ),
    stack_tpot=Reason(Cause.MISSING_INPUT, WC_DNN),
    stack_ttft=Reason(Cause.MISSING_INPUT, PROFILES),
    absolute=Reason(Cause.INCONSISTENT, LITTLE),
    crossover=Reason(
        Cause.SIMPLIFICATION,
        "DSD-Sim's fused rounds bypass the target's queue "
        "and batches (fused_execute); here a cloud-only round queues and batches "
        "on a TP-1 70B target and commits one token per pass, so it is slower "
        "than distributed at every RTT (the compat rows run it unqueued)",
    ),
    awc=Reason(Cause.MISSING_INPUT, WC_DNN),
    table_ttft=Reason(
        Cause.MISSING_INPUT, PROFILES + "; CNN/DailyMail's lengths (the ShareGPT table stands in)"
    ),
    table_tpot=Reason(Cause.INCONSISTENT, LITTLE),
    routing=Reason(
        Cause.MISSING_INPUT,
        "DSD's VIDUR profiles: round-robin's imbalance costs "
        "more on a target whose pass takes 64–265 ms, so its gap to JSQ is wider and "
        "closes later",
    ),
    batching=Reason(
        Cause.MISSING_INPUT,
        "LAB's grouping rule (not given: here a batch takes "
        "requests within 1.5× of the head-of-line request's length and waits for "
        "them), which on saturated targets shrinks batches and delays rounds",
    ),
)
COMPAT = DsdCauses(
    stack_gain=PHYSICAL.stack_gain,
    stack_tpot=PHYSICAL.stack_tpot,
    stack_ttft=PHYSICAL.stack_ttft,
    absolute=PHYSICAL.absolute,
    crossover=Reason(
        Cause.MISSING_INPUT,
        "DSD's VIDUR profiles: the crossover is the RTT at "
        "which a round's network time outweighs a cloud-only token's draft and "
        "target passes; on the roofline presets that is ≈100 ms",
    ),
    awc=Reason(Cause.MISSING_INPUT, WC_DNN),
    table_ttft=PHYSICAL.table_ttft,
    table_tpot=PHYSICAL.table_tpot,
    routing=PHYSICAL.routing,
    batching=PHYSICAL.batching,
)
UNSATURATED = Reason(
    Cause.QUICK_RUN,
    "the quick run's sweep stops short of the draft count that saturates the targets",
)
"""D7's throughput row in a quick run, where the sweep's largest draft count does not
saturate (the full sweep's does)."""
CAUSES: dict[CostMode, DsdCauses] = {"physical": PHYSICAL, "dsdsim_compat": COMPAT}
MODE_TAGS: dict[CostMode, str] = {"physical": "physical", "dsdsim_compat": "DSD-Sim compat"}
"""How a row names its cost mode (``[physical] …``, ``[DSD-Sim compat] …``)."""


def tagged(mode: CostMode, what: str) -> str:
    return f"[{MODE_TAGS[mode]}] {what}"
