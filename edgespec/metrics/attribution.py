"""Why rounds miss their deadlines (WISP Eq. 21, Fig. 8): compute spikes or queueing.

A round *violates* when its verification ends after its deadline
(``RoundRecord.server_done_s > deadline_s``). For each violated round,

    ρ = t_verify / MA_W(t_verify),

with t_verify its batch's verification time and MA_W the mean verification time of the
last ``window`` batches on the same server, this round's batch included (so ρ is defined
from the first batch on). A violated round is *compute-dominant* when ρ > ``threshold``
(the paper's τ, 1.5): its batch took unusually long; otherwise *queue-dominant*: it waited
too long for a batch of ordinary length.

Batches are recovered from the round records: the rounds of one batch share the server and
the verification's end (a server runs one pass at a time), and its time is the longest
``verify_s`` among them (the simulator's fused round counts its co-located draft's part of
the pass as ``draft_s``, a distributed round batched with it the whole pass as its
``verify_s``; a batch of fused rounds alone leaves that part out). Pure aggregation over
the shared record type, so the simulator's rounds and the real drafter's can both be
attributed.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from edgespec.core.types import RoundRecord

DEFAULT_WINDOW = 20
"""W: batches in the moving average (the paper does not give it)."""
DEFAULT_THRESHOLD = 1.5
"""τ of Eq. 21 (the paper's example value)."""


@dataclass(frozen=True, slots=True)
class ViolatedRound:
    """One violated round: its queueing and verification times and ρ."""

    request_id: str
    round_index: int
    server_id: int
    queue_s: float
    verify_s: float
    rho: float
    compute_dominant: bool


@dataclass(frozen=True, slots=True)
class ViolationAttribution:
    """Eq. 21 over a run's rounds."""

    window: int
    threshold: float
    num_rounds_with_deadline: int
    violated: tuple[ViolatedRound, ...]

    @property
    def num_violated(self) -> int:
        return len(self.violated)

    @property
    def num_compute_dominant(self) -> int:
        return sum(1 for v in self.violated if v.compute_dominant)

    @property
    def compute_share(self) -> float | None:
        """Share of violated rounds that are compute-dominant (``None``: none violated)."""
        return self.num_compute_dominant / len(self.violated) if self.violated else None


def attribute_violations(
    rounds: Iterable[RoundRecord],
    window: int = DEFAULT_WINDOW,
    threshold: float = DEFAULT_THRESHOLD,
) -> ViolationAttribution:
    """Eq. 21 attribution of the violated rounds among ``rounds`` (any order)."""
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    by_server: dict[int, dict[float, list[RoundRecord]]] = {}
    for r in rounds:  # a server runs one pass at a time: its batches end apart
        by_server.setdefault(r.server_id, {}).setdefault(round(r.server_done_s, 9), []).append(r)
    num_with_deadline = 0
    violated: list[ViolatedRound] = []
    for server_id in sorted(by_server):
        recent: deque[float] = deque(maxlen=window)
        batches = by_server[server_id]
        for done_s in sorted(batches):
            batch = sorted(batches[done_s], key=lambda r: r.request_id)
            recent.append(max(r.verify_s for r in batch))  # the pass (a fused round's is less)
            mean = sum(recent) / len(recent)
            rho = recent[-1] / mean if mean > 0 else 1.0
            for r in batch:
                if r.deadline_s is None:
                    continue
                num_with_deadline += 1
                if r.server_done_s > r.deadline_s:
                    violated.append(
                        ViolatedRound(
                            r.request_id, r.round_index, server_id, r.queue_s, r.verify_s, rho,
                            rho > threshold,
                        )
                    )  # fmt: skip
    return ViolationAttribution(window, threshold, num_with_deadline, tuple(violated))
