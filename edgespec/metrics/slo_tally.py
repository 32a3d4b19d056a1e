"""SLO attainment per class, counted as requests complete: how many carried a target
(tokens/s), how many met it, and the class's target (None once two differ)."""

from __future__ import annotations

from edgespec.core.unfinished import UnfinishedClass
from edgespec.metrics.types import SloClassStats


def ratio(num: float, den: float) -> float | None:
    """``num / den``, None when ``den`` is not positive."""
    return num / den if den > 0 else None


def attainment_bounds(
    num_met: int, num_with_target: int, num_unfinished_with_target: int, num_missed: int
) -> tuple[float | None, float | None]:
    """The SLO attainment over every request with a target that arrived, finished
    (``num_with_target``, ``num_met`` of them met) or not (``num_unfinished_with_target``,
    ``num_missed`` of them already sure to miss): at least with each unfinished one a miss,
    at most with each not sure to miss a hit (``None`` where none had a target)."""
    arrived = num_with_target + num_unfinished_with_target
    num_open = num_unfinished_with_target - num_missed
    return ratio(num_met, arrived), ratio(num_met + num_open, arrived)


class _ClassTally:
    __slots__ = (
        "mixed_targets",
        "num_met",
        "num_requests",
        "num_unfinished_missed",
        "num_unfinished_with_target",
        "num_with_target",
        "target",
    )

    def __init__(self) -> None:
        self.num_requests = 0
        self.num_with_target = 0
        self.num_met = 0
        self.num_unfinished_with_target = 0
        self.num_unfinished_missed = 0
        self.target: float | None = None
        self.mixed_targets = False

    def see_target(self, target: float) -> None:
        """Note a request's target (the class's, until two differ)."""
        if self.target is not None and self.target != target:
            self.mixed_targets = True
        self.target = target

    def merge(self, other: _ClassTally) -> None:
        if other.target is not None:
            self.see_target(other.target)
        self.mixed_targets = self.mixed_targets or other.mixed_targets
        self.num_requests += other.num_requests
        self.num_with_target += other.num_with_target
        self.num_met += other.num_met
        self.num_unfinished_with_target += other.num_unfinished_with_target
        self.num_unfinished_missed += other.num_unfinished_missed


class SloTally:
    """The classes' tallies, by class name."""

    __slots__ = ("_classes",)

    def __init__(self) -> None:
        self._classes: dict[str, _ClassTally] = {}

    def add(self, slo_class: str, target_tokens_per_s: float | None, met: bool) -> None:
        """Count one completed request of ``slo_class`` (``met`` counts only with a target)."""
        tally = self._tally(slo_class)
        tally.num_requests += 1
        if target_tokens_per_s is not None:
            tally.see_target(target_tokens_per_s)
            tally.num_with_target += 1
            tally.num_met += met

    def add_unfinished(self, unfinished: UnfinishedClass) -> None:
        """Count a class's requests unfinished at the run's end (they hold no place in
        ``num_requests``: the class's finished requests)."""
        tally = self._tally(unfinished.slo_class)
        tally.see_target(unfinished.target_tokens_per_s)
        tally.num_unfinished_with_target += unfinished.num_with_target
        tally.num_unfinished_missed += unfinished.num_missed

    def _tally(self, slo_class: str) -> _ClassTally:
        tally = self._classes.get(slo_class)
        if tally is None:
            tally = self._classes[slo_class] = _ClassTally()
        return tally

    def merge(self, other: SloTally) -> None:
        """Add every request ``other`` counted."""
        for name, theirs in other._classes.items():
            mine = self._classes.get(name)
            if mine is None:
                mine = self._classes[name] = _ClassTally()
            mine.merge(theirs)

    @property
    def num_with_target(self) -> int:
        return sum(t.num_with_target for t in self._classes.values())

    @property
    def num_met(self) -> int:
        return sum(t.num_met for t in self._classes.values())

    @property
    def num_unfinished_with_target(self) -> int:
        return sum(t.num_unfinished_with_target for t in self._classes.values())

    @property
    def num_unfinished_missed(self) -> int:
        return sum(t.num_unfinished_missed for t in self._classes.values())

    def stats(self, unfinished_counted: bool) -> tuple[SloClassStats, ...]:
        """Each class's figures, by class name (its unfinished requests ``None`` unless
        ``unfinished_counted``)."""
        return tuple(
            _class_stats(name, self._classes[name], unfinished_counted)
            for name in sorted(self._classes)
        )


def _class_stats(name: str, tally: _ClassTally, unfinished_counted: bool) -> SloClassStats:
    with_target, missed = tally.num_unfinished_with_target, tally.num_unfinished_missed
    least, most = (
        attainment_bounds(tally.num_met, tally.num_with_target, with_target, missed)
        if unfinished_counted
        else (None, None)
    )
    return SloClassStats(
        slo_class=name,
        target_tokens_per_s=None if tally.mixed_targets else tally.target,
        num_requests=tally.num_requests,
        num_with_target=tally.num_with_target,
        num_met=tally.num_met,
        attainment=ratio(tally.num_met, tally.num_with_target),
        num_unfinished_with_target=with_target if unfinished_counted else None,
        num_unfinished_missed=missed if unfinished_counted else None,
        attainment_at_least=least,
        attainment_at_most=most,
    )
