"""SLO attainment per class, counted as requests complete: how many carried a target
(tokens/s), how many met it, and the class's target (None once two differ)."""

from __future__ import annotations

from edgespec.metrics.types import SloClassStats


def ratio(num: float, den: float) -> float | None:
    """``num / den``, None when ``den`` is not positive."""
    return num / den if den > 0 else None


class _ClassTally:
    __slots__ = ("mixed_targets", "num_met", "num_requests", "num_with_target", "target")

    def __init__(self) -> None:
        self.num_requests = 0
        self.num_with_target = 0
        self.num_met = 0
        self.target: float | None = None
        self.mixed_targets = False

    def merge(self, other: _ClassTally) -> None:
        if other.num_with_target:
            if self.num_with_target and self.target != other.target:
                self.mixed_targets = True
            self.target = other.target
        self.mixed_targets = self.mixed_targets or other.mixed_targets
        self.num_requests += other.num_requests
        self.num_with_target += other.num_with_target
        self.num_met += other.num_met


class SloTally:
    """The classes' tallies, by class name."""

    __slots__ = ("_classes",)

    def __init__(self) -> None:
        self._classes: dict[str, _ClassTally] = {}

    def add(self, slo_class: str, target_tokens_per_s: float | None, met: bool) -> None:
        """Count one completed request of ``slo_class`` (``met`` counts only with a target)."""
        tally = self._classes.get(slo_class)
        if tally is None:
            tally = self._classes[slo_class] = _ClassTally()
        tally.num_requests += 1
        if target_tokens_per_s is not None:
            if tally.num_with_target and tally.target != target_tokens_per_s:
                tally.mixed_targets = True
            tally.target = target_tokens_per_s
            tally.num_with_target += 1
            tally.num_met += met

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

    def stats(self) -> tuple[SloClassStats, ...]:
        """Each class's figures, by class name."""
        return tuple(_class_stats(name, self._classes[name]) for name in sorted(self._classes))


def _class_stats(name: str, tally: _ClassTally) -> SloClassStats:
    return SloClassStats(
        slo_class=name,
        target_tokens_per_s=None if tally.mixed_targets else tally.target,
        num_requests=tally.num_requests,
        num_with_target=tally.num_with_target,
        num_met=tally.num_met,
        attainment=ratio(tally.num_met, tally.num_with_target),
    )
