"""WISP's SLO-aware batch scheduler (seed 000, §4.2–4.3, Algorithm 1) as a batching policy.

At each dispatch epoch t (whenever the engine is free and the queue is not empty) every
queued verification i gets

* ĝ_i = N̂ᵛ_i, its expected accepted draft tokens (``PendingVerification.expected_accepted``;
  the draft length when the host gives none);
* v̂_i, its *marginal* verification cost: what adding it to a batch adds to the estimated
  batch time, T̂({i}) − c with T̂ the fitted Eq. 19 estimator (the fixed cost c is paid once
  per batch, whoever is in it);
* m̂_i = its context tokens (the KV it occupies), against M = ``limits.max_context_tokens``;
* U_i = ĝ_i / v̂_i (Eq. 16) and LST_i = d_i − T̂({i}) − δ (Eq. 17, with a batch's whole
  time T̂({i}) where the paper writes v̂_i: docs/REPRODUCE.md, *WISP*): the latest time at
  which a batch holding i alone can start and still meet d_i, less the guard δ.

Requests with t ≥ LST_i are *critical* and go first in deadline order (EDF); the rest
follow by decreasing utility (ties: the oldest first). Both loops add while FEASIBLEADD
holds (memory, the host's batch size and token limits, and t + T̂(B′) ≤ min deadline over
B′) and stop at the first request that does not fit, as Algorithm 1 is printed (no
skipping).

**Work-conserving variant** (``work_conserving=True``, a reading the paper does not print):
each loop skips a request that does not fit and tries the next, so the batch takes every
queued request FEASIBLEADD admits, in the same order. Table 1 may come from either reading
(SEED-NOTES §1.4; ``edgespec reproduce wisp`` runs both).

Two rules the paper leaves open (SEED-NOTES §1.4 items 7–8):

* **Late requests.** A request whose deadline cannot be met even alone (t + T̂({i}) > d_i)
  would fail FEASIBLEADD on an empty batch forever and stall the server. It is *late*: it
  is admitted anyway, first — EDF's order, since its deadline is the earliest — but its
  own deadline no longer binds the batch (no batch is held to an unreachable bound). Late
  requests go in most overdue first; then the critical loop and the utility loop follow,
  their deadline checks counting the time the late ones add. A late request that does not
  fit (the batch's size, token or memory limit) ends the batch as a critical one does: no
  less urgent request is added past it.
* **Never idle.** The first request tried always fits the empty batch: one request alone
  may exceed the memory and token limits (as the batching contract allows, or it would
  block the queue forever), a critical or utility request meets its deadline alone by
  construction, and a late one carries none. So the plan is never empty while requests are
  queued: WISP is work-conserving, it never waits.

Requests without a deadline (a class with no target) are never critical and impose no
deadline. The decision costs O(n log n) for n queued requests.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from edgespec.config import as_written
from edgespec.core.types import BatchPlan, PendingVerification
from edgespec.policies.estimator import WispCoefficients
from edgespec.policies.interfaces import BatchLimits
from edgespec.policies.params import PolicyParamError

DEFAULT_GUARD_S = 0.005
"""δ (Eq. 17): 5 ms, a third of Table 12's fixed batch cost c = 14.86 ms."""


@dataclass(slots=True)
class _Batch:
    """A batch under construction with Eq. 18's running counts."""

    ids: list[int]
    num_linear: int = 0
    num_interactions: int = 0
    num_cached: int = 0
    num_context: int = 0
    min_deadline_s: float = math.inf


@dataclass(frozen=True, slots=True)
class WispBatching:
    """Algorithm 1 over the fitted estimator ``estimator`` with guard ``guard_s`` (δ);
    ``work_conserving``: skip a request that does not fit instead of stopping there."""

    estimator: WispCoefficients
    guard_s: float = DEFAULT_GUARD_S
    work_conserving: bool = False

    def __post_init__(self) -> None:
        if not self.guard_s >= 0 or math.isinf(self.guard_s):
            raise ValueError(f"guard_s must be a finite number >= 0, got {self.guard_s}")

    def solo_s(self, entry: PendingVerification) -> float:
        """T̂({i}): the estimated time of a batch holding ``entry`` alone."""
        new, cached = entry.num_new_tokens, entry.num_cached_tokens
        return self.estimator.time_s(new, (cached + new) * new, cached)

    def select(
        self, queue: Sequence[PendingVerification], now_s: float, limits: BatchLimits
    ) -> BatchPlan:
        c_s = self.estimator.c_s
        critical: list[tuple[float, int, PendingVerification]] = []
        late: list[tuple[float, int, PendingVerification]] = []
        rest: list[tuple[float, float, int, PendingVerification]] = []
        for e in queue:
            solo = self.solo_s(e)
            deadline = e.deadline_s
            if deadline is not None and now_s + solo > deadline:
                late.append((deadline, e.entry_id, e))
            elif deadline is not None and now_s >= deadline - solo - self.guard_s:
                critical.append((deadline, e.entry_id, e))
            else:
                gain = e.num_draft_tokens if e.expected_accepted is None else e.expected_accepted
                utility = gain / max(solo - c_s, 1e-12)
                rest.append((-utility, e.enqueued_s, e.entry_id, e))
        critical.sort(key=lambda item: (item[0], item[1]))
        rest.sort(key=lambda item: (item[0], item[1], item[2]))
        late.sort(key=lambda item: (item[0], item[1]))
        batch = _Batch([])
        if self.work_conserving:  # every request FEASIBLEADD admits, in the same order
            for e in (e for _, _, e in late):
                self._feasible_add(batch, e, now_s, limits, False)
            for e in (*(e for _, _, e in critical), *(e for *_, e in rest)):
                self._feasible_add(batch, e, now_s, limits, True)
            return BatchPlan(tuple(batch.ids), reason="wisp")
        # The late, the critical and the utility loop in turn, each stopping at the first
        # request that does not fit, and nothing after it (no skipping past a late one).
        if self._fill(batch, [e for _, _, e in late], now_s, limits, False) and self._fill(
            batch, [e for _, _, e in critical], now_s, limits, True
        ):
            self._fill(batch, [e for *_, e in rest], now_s, limits, True)
        return BatchPlan(tuple(batch.ids), reason="wisp")

    def _fill(
        self,
        batch: _Batch,
        entries: list[PendingVerification],
        now_s: float,
        limits: BatchLimits,
        keep_deadline: bool,
    ) -> bool:
        """Add ``entries`` in order while FEASIBLEADD holds; False at the first that does
        not fit (``keep_deadline``: the entry's own deadline binds the batch)."""
        return all(self._feasible_add(batch, e, now_s, limits, keep_deadline) for e in entries)

    def _feasible_add(
        self,
        batch: _Batch,
        e: PendingVerification,
        now_s: float,
        limits: BatchLimits,
        keep_deadline: bool,
    ) -> bool:
        new, cached = e.num_new_tokens, e.num_cached_tokens
        if len(batch.ids) >= limits.max_batch_size:
            return False
        num_linear = batch.num_linear + new
        num_context = batch.num_context + new + cached
        if batch.ids and (
            num_linear > limits.max_batch_tokens or num_context > limits.max_context_tokens
        ):
            return False
        deadline = batch.min_deadline_s
        if keep_deadline and e.deadline_s is not None:
            deadline = min(deadline, e.deadline_s)
        num_interactions = batch.num_interactions + (cached + new) * new
        num_cached = batch.num_cached + cached
        if now_s + self.estimator.time_s(num_linear, num_interactions, num_cached) > deadline:
            return False
        batch.ids.append(e.entry_id)
        batch.num_linear, batch.num_interactions = num_linear, num_interactions
        batch.num_cached, batch.num_context = num_cached, num_context
        batch.min_deadline_s = deadline
        return True


def wisp_batching(
    *,
    a_s: float,
    b_compute_s: float,
    b_read_s: float,
    c_s: float,
    guard_s: float = DEFAULT_GUARD_S,
    work_conserving: bool = False,
) -> WispBatching:
    """Registry factory: ``WispBatching`` from Eq. 19's four coefficients (a host turns a
    ``profile`` parameter into them), δ and the reading (printed or work-conserving); a
    coefficient or δ that is not a finite number >= 0 is a :class:`PolicyParamError`
    naming it."""
    coefficients = {"a_s": a_s, "b_compute_s": b_compute_s, "b_read_s": b_read_s, "c_s": c_s}
    for name, value in (*coefficients.items(), ("guard_s", guard_s)):
        if not (math.isfinite(value) and value >= 0):
            raise PolicyParamError(name, f"{name} must be a finite number >= 0, got {value}")
    if not isinstance(work_conserving, bool):
        raise ValueError(
            f"work_conserving must be true or false, got {as_written(work_conserving)}"
        )
    return WispBatching(WispCoefficients(a_s, b_compute_s, b_read_s, c_s), guard_s, work_conserving)
