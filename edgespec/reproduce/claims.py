"""Claims of a reproduced paper, side by side with ours (REPORT.md's markdown:
:mod:`edgespec.reproduce.report_file`).

Every ``edgespec reproduce <seed>`` returns :class:`ClaimRow` s: one per claim (and sub-claim)
of SEED-NOTES' checklist, each with the paper's number, edgespec's, the tolerance and two
verdicts — the *direction* (who beats whom, which way a curve bends) and the *magnitude*
(within the tolerance). A row whose magnitude cannot be compared (the paper gives no number)
says so with ``None``.

A row's :attr:`~ClaimRow.outcome` sums the verdicts up: it holds (no verdict failed), holds in
direction only (direction right, magnitude outside the tolerance), or misses (direction
wrong, or magnitude outside the tolerance where no direction is judged). A miss stays a miss
and carries its cause: the :class:`Reason` (a :class:`Cause` and one line) that the claim's
builder states, or "cause not known" where it states none. In a ``--quick`` run a row whose
magnitude depends on the run length says what the quick run shortened (``quick_run``); its
magnitude is then not compared with the paper's, and its cause is :attr:`Cause.QUICK_RUN`.
A cause line that quotes the run's own numbers names them as left to the full run in a quick
run (:func:`left_to_full_run`), as a quick REPORT.md's findings that rest on them are.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

UNKNOWN_CAUSE = "cause not known"


class Cause(Enum):
    """The cause class of a miss (DESIGN: "A miss carries its cause class"), and the quick
    run's."""

    INCONSISTENT = "the paper is inconsistent with itself"
    MISSING_INPUT = "an input the paper does not give"
    MODELLING = "a modelling difference"
    SIMPLIFICATION = "a simplification of the paper's own simulator"
    QUICK_RUN = "magnitude depends on run length (quick run)"


@dataclass(frozen=True, slots=True)
class Reason:
    """The known cause of a claim's miss: its class and one line saying what happens."""

    cause: Cause
    line: str

    def __str__(self) -> str:
        return f"{self.cause.value} — {self.line}"


class Outcome(Enum):
    """What a row's two verdicts add up to (the report's headline counts these)."""

    HOLDS = "hold"
    DIRECTION_ONLY = "hold in direction only"
    MISS = "miss"
    QUICK = "not comparable (quick run)"
    NOT_JUDGED = "not judged"
    SETTING = "setting, not a claim"
    BY_CONSTRUCTION = "by construction, not judged"
    UNREACHED = "not comparable (setting not reached)"
    WITHIN_RESOLUTION = "not comparable (within resolution)"


@dataclass(frozen=True, slots=True)
class ClaimRow:
    """One compared number (or statement)."""

    claim_id: str
    what: str
    paper: str
    ours: str
    tolerance: str
    direction_ok: bool | None
    magnitude_ok: bool | None
    note: str = ""
    """Detail beside the numbers (which ratio missed, the other accounting, …)."""
    reason: Reason | None = None
    """The known cause of the claim's miss, stated by its builder; shown only when the row
    does not hold. ``None``: no cause is known (the report says so)."""
    quick_run: str = ""
    """In a ``--quick`` run, what it shortened that this row's magnitude depends on; empty in
    a full run, and for rows whose magnitude does not depend on the run length."""
    setting: str = ""
    """Non-empty for a row whose number a chosen input fixes (a setting shown beside the
    paper's, not a claim): which input fixes it. Such a row is never judged: its outcome is
    :attr:`Outcome.SETTING` whatever its verdicts, so it cannot pass or fail."""
    by_construction: str = ""
    """Non-empty for a row whose verdict the model's construction decides, so that no run
    could come out otherwise (an input the compared quantity does not read, a monotone
    model fed a fixed order): why. Its numbers are shown; its outcome is
    :attr:`Outcome.BY_CONSTRUCTION`, counted apart from the rows that hold: a verdict that
    cannot fail is no evidence."""
    unreached: str = ""
    """Non-empty for a row judged at a setting the run did not reach within its tolerance
    (the paper's operating point missed by more than it allows): by how much. Its numbers
    are shown, its verdicts not counted: its outcome is :attr:`Outcome.UNREACHED`."""
    within_resolution: str = ""
    """Non-empty for a row whose direction its measurement cannot resolve (the compared
    values lie within each other's resolution: two knees in one grid step): why. Its
    numbers are shown, its verdicts not counted: its outcome is
    :attr:`Outcome.WITHIN_RESOLUTION`, neither a hold nor a miss."""

    @property
    def holds(self) -> bool:
        """No verdict failed, and at least one was judged."""
        judged = (self.direction_ok, self.magnitude_ok)
        return False not in judged and judged != (None, None)

    @property
    def quick_magnitude(self) -> bool:
        """The magnitude was judged on a quick run too short to compare it with the paper's."""
        return bool(self.quick_run) and self.magnitude_ok is not None

    @property
    def outcome(self) -> Outcome:
        """What the verdicts add up to; a quick run's magnitude is not compared; a setting
        is not judged."""
        if self.setting:
            return Outcome.SETTING
        if self.by_construction:
            return Outcome.BY_CONSTRUCTION
        if self.unreached:
            return Outcome.UNREACHED
        if self.within_resolution:
            return Outcome.WITHIN_RESOLUTION
        if self.direction_ok is False:
            return Outcome.MISS
        if self.quick_magnitude:
            return Outcome.DIRECTION_ONLY if self.direction_ok else Outcome.QUICK
        if self.magnitude_ok is False:
            return Outcome.DIRECTION_ONLY if self.direction_ok else Outcome.MISS
        if self.direction_ok or self.magnitude_ok:
            return Outcome.HOLDS
        return Outcome.NOT_JUDGED

    @property
    def _quick_explains(self) -> bool:
        """The quick run, not the claim's own cause, is why this row does not hold."""
        return self.quick_magnitude and self.direction_ok is not False

    @property
    def cause(self) -> Cause | None:
        """The cause class shown for a row that does not hold: the quick run's where only the
        quick run's magnitude keeps it from holding, else the stated one; ``None`` for a row
        that holds or is not judged, and for a miss without a stated cause."""
        if self.outcome in _UNEXPLAINED:
            return None
        if self._quick_explains:
            return Cause.QUICK_RUN
        return None if self.reason is None else self.reason.cause

    @property
    def why(self) -> str:
        """The cause class and its line (or "cause not known") for a row that does not
        hold; empty for one that holds or is not judged."""
        if self.outcome in _UNEXPLAINED:
            return ""
        if self._quick_explains:
            return str(Reason(Cause.QUICK_RUN, self.quick_run))
        own = UNKNOWN_CAUSE if self.reason is None else str(self.reason)
        return f"{own}; magnitude not compared (quick run)" if self.quick_magnitude else own

    @property
    def verdict(self) -> str:
        if self.setting:
            return f"setting: {self.setting}"
        if self.by_construction:
            return f"by construction: {self.by_construction}"
        if self.unreached:
            return f"not comparable: {self.unreached}"
        if self.within_resolution:
            return f"not comparable: {self.within_resolution}"
        return f"direction {mark(self.direction_ok)}, magnitude {self.magnitude_mark}"

    @property
    def magnitude_mark(self) -> str:
        """The magnitude's verdict as shown (:func:`magnitude_mark`)."""
        return magnitude_mark(self.magnitude_ok, self.quick_run)


@dataclass(frozen=True, slots=True)
class Finding:
    """Where the paper itself is wrong or rests on its simulator's simplification (REPORT.md's
    *Findings*): the claims it concerns, its class, what the run shows and which run shows
    it (the rows, a file of the run folder)."""

    claims: str
    cause: Cause
    line: str
    shown_by: str
    from_run: str = ""
    """The run's numbers the finding rests on (empty: the paper's printed numbers and the
    chosen inputs alone). A quick run does not compare its numbers with the paper's, so its
    REPORT.md states no such finding: it names it and them as left to the full run."""

    def markdown(self) -> str:
        return f"- **{self.claims}** ({self.cause.value}): {self.line} Shown by: {self.shown_by}."


@dataclass(frozen=True, slots=True)
class PaperError:
    """A known error of the paper (SEED-NOTES lists them), for REPORT.md's *Where the paper
    is wrong*: the claims it touches, what the paper prints or says, and what its own
    numbers (or the run) give instead, with which the rows compare."""

    claims: str
    printed: str
    instead: str

    def markdown(self) -> str:
        return f"- **{self.claims}**: the paper says {self.printed}; {self.instead}."


def left_to_full_run(numbers: str) -> str:
    """A quick run's words, in a cause line, for the run's numbers that the full run's line
    quotes (``numbers`` says which): left to the full run, as a quick REPORT.md's findings
    that rest on the run's numbers are (:attr:`Finding.from_run`)."""
    return f"{numbers}: left to the full run (quick run)"


UNJUDGED = (
    Outcome.SETTING,
    Outcome.BY_CONSTRUCTION,
    Outcome.UNREACHED,
    Outcome.WITHIN_RESOLUTION,
)
"""Outcomes of rows whose verdicts are shown as reasons, never as marks: nothing could fail,
or nothing is compared."""
_UNEXPLAINED = (Outcome.HOLDS, Outcome.NOT_JUDGED, *UNJUDGED)
"""Outcomes that need no cause: nothing failed, nothing was judged, or nothing could fail."""


def mark(ok: bool | None) -> str:
    return "–" if ok is None else ("✓" if ok else "✗")


def magnitude_mark(ok: bool | None, quick_run: str = "") -> str:
    """A magnitude's verdict as shown, in a row or in a sensitivity's would-be verdicts:
    its mark, or ``– (quick run)`` where ``quick_run`` says what a quick run shortened that
    it depends on (not compared with the paper's, whatever it came out)."""
    return f"{mark(None)} (quick run)" if quick_run and ok is not None else mark(ok)


def within(ours: float, paper: float, relative: float) -> bool:
    """|ours − paper| ≤ relative·|paper| (finite numbers only)."""
    if not (math.isfinite(ours) and math.isfinite(paper)):
        return False
    return abs(ours - paper) <= relative * abs(paper)


def fmt(value: float | None, spec: str = ".3g") -> str:
    return "n/a" if value is None else format(value, spec)


def change(new: float | None, old: float | None) -> float | None:
    """Relative change ``new / old − 1``; ``None`` when either is missing or ``old`` is 0."""
    return None if new is None or old is None or old == 0 else new / old - 1.0


def pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 100:+.1f}%"


def headline(rows: Sequence[ClaimRow]) -> str:
    """``23 rows: 5 hold, 9 hold in direction only, 9 miss`` (then the quick run's rows not
    compared, and the rows not judged, where there are any)."""
    counts = Counter(r.outcome for r in rows)
    shown = [Outcome.HOLDS, Outcome.DIRECTION_ONLY, Outcome.MISS]
    apart = (Outcome.QUICK, Outcome.NOT_JUDGED, *UNJUDGED)
    shown += [o for o in apart if counts[o]]
    noun = "row" if len(rows) == 1 else "rows"
    return f"{len(rows)} {noun}: " + ", ".join(f"{counts[o]} {o.value}" for o in shown)


QUICK_PRINTED = (
    "quick run: a magnitude that depends on the run length is not compared with the paper's"
)
