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
    "Table 2's own numbers: with closed-loop drafts (DSD-Sim's 1.7 s think time) C1's 600 "
    "drafts at 25.8 requests/s spend 600 / 25.8 − 1.7 − 0.35 = 21.2 s per conversation, "
    "530 tokens at its 40 ms TPOT, against GSM8K's 80–200-token answers (DSD-Sim's trace); "
    "throughput, TTFT and TPOT cannot all hold together"
)
"""Little's law over Table 2 C1 (the load model's own arithmetic)."""

PHYSICAL = DsdCauses(
    stack_gain=Reason(
        Cause.MISSING_INPUT,
        "DSD's per-pair acceptance and VIDUR profiles: the policies' gains depend on them",
    ),
    stack_tpot=Reason(Cause.INCONSISTENT, LITTLE),
    stack_ttft=Reason(
        Cause.MISSING_INPUT,
        "DSD's VIDUR profiles: a TP-1 70B pass on the roofline presets costs 60–260 ms",
    ),
    absolute=Reason(Cause.INCONSISTENT, LITTLE),
    crossover=Reason(
        Cause.SIMPLIFICATION,
        "DSD-Sim's fused rounds bypass the target's queue "
        "and batches (fused_execute); here a cloud-only round queues and batches "
        "on a TP-1 70B target and commits one token per pass, so it is slower "
        "than distributed at every RTT",
    ),
    awc=Reason(
        Cause.MISSING_INPUT,
        "DSD's per-pair acceptance and VIDUR profiles, which decide when a window change pays",
    ),
    table_ttft=Reason(Cause.MISSING_INPUT, "DSD's VIDUR profiles and CNN/DailyMail's lengths"),
    table_tpot=Reason(Cause.INCONSISTENT, LITTLE),
    routing=Reason(Cause.MISSING_INPUT, "DSD's VIDUR profiles and per-pair acceptance"),
    batching=Reason(
        Cause.MISSING_INPUT,
        "DSD's VIDUR profiles: LAB groups requests within "
        "1.5× of the head-of-line request's length and waits for them",
    ),
)
COMPAT = DsdCauses(
    stack_gain=PHYSICAL.stack_gain,
    stack_tpot=PHYSICAL.stack_tpot,
    stack_ttft=PHYSICAL.stack_ttft,
    absolute=PHYSICAL.absolute,
    crossover=Reason(
        Cause.MISSING_INPUT,
        "DSD's VIDUR profiles: the crossover is where a "
        "round's RTT outweighs a cloud-only token's draft and target passes",
    ),
    awc=PHYSICAL.awc,
    table_ttft=PHYSICAL.table_ttft,
    table_tpot=PHYSICAL.table_tpot,
    routing=PHYSICAL.routing,
    batching=PHYSICAL.batching,
)
CAUSES: dict[CostMode, DsdCauses] = {"physical": PHYSICAL, "dsdsim_compat": COMPAT}
MODE_TAGS: dict[CostMode, str] = {"physical": "physical", "dsdsim_compat": "DSD-Sim compat"}
"""How a row names its cost mode (``[physical] …``, ``[DSD-Sim compat] …``)."""


def tagged(mode: CostMode, what: str) -> str:
    return f"[{MODE_TAGS[mode]}] {what}"
