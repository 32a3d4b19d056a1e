"""Whether WISP's capacity depends on the requests a run leaves unfinished.

Eq. 20's violation rate counts the requests that finished inside the run (as every claim
does, :mod:`edgespec.reproduce.wisp.setup`): a device whose requests queue up behind a
slow one shows only its survivors. :func:`unfinished_sensitivity` searches WISP's
capacity on the late-request sensitivity's setting (classes mixed and pooled, another
seed, shorter runs) with the unfinished requests already sure to miss their class's speed
counted as misses, those not yet sure left out
(:func:`~edgespec.metrics.violation_rates.decided_violation_rate`). Counting
every unfinished request as a miss is not searched: the request each device runs at a
run's end would count, so a short run violates ε at any load. A sensitivity, shown in
REPORT.md, never used to judge.
"""

from __future__ import annotations

from dataclasses import dataclass

from edgespec.metrics.violation_rates import decided_violation_rate
from edgespec.reproduce.wisp.runner import LATE_RULE, pooled_capacity
from edgespec.reproduce.wisp.setup import WispSetup


@dataclass(frozen=True, slots=True)
class UnfinishedSensitivity:
    """WISP's pooled capacity counting finished requests only (the late-request
    sensitivity's, under the chosen rule) and with the unfinished requests already sure to
    miss counted too."""

    seed: int
    duration_s: float
    epsilon: float
    finished_only: int | None
    sure_misses: int | None
    """The most devices of mixed classes with at most ``epsilon`` of the finished requests
    and the unfinished ones already sure to miss below their class's speed (``None``: not
    even one device)."""

    def line(self) -> str:
        """The sensitivity, for REPORT.md's *Sensitivities*."""
        return (
            f"**unfinished requests** (chosen: Eq. 20 counts finished requests only): WISP's "
            f"capacity (ε = {100 * self.epsilon:g}% over all classes pooled, late-request rule "
            f"“{LATE_RULE}”) with devices of mixed classes, seed {self.seed}, "
            f"{self.duration_s:g} s runs: {self.finished_only or 0} devices counting finished "
            f"requests (as every claim), {self.sure_misses or 0} with the unfinished ones "
            "already sure to miss counted as misses."
        )


def unfinished_sensitivity(
    setup: WispSetup, seed: int, duration_s: float, hi: int, finished_only: int | None
) -> UnfinishedSensitivity:
    """WISP's pooled capacity (devices 1…``hi``) with the unfinished requests already sure
    to miss counted, on ``setup`` with ``seed`` and runs of ``duration_s``;
    ``finished_only``: the late-request sensitivity's capacity under the chosen rule (the
    same setting)."""
    sure_misses = pooled_capacity(setup, seed, duration_s, hi, LATE_RULE, decided_violation_rate)
    return UnfinishedSensitivity(seed, duration_s, setup.epsilon, finished_only, sure_misses)
