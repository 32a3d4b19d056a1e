"""Capacity search, WISP Eq. 20: Cap(τ) = max{N | Pr[token speed < τ] ≤ ε}.

Bisection over an integer scenario key (usually a device count), assuming the SLO
violation rate grows monotonically with it. Generic over a runner
``run(scenario_dict) -> SystemMetrics``; every probe is recorded. Only values the scenario
accepts are probed: multiples of the caller's :class:`ProbeStep` (a pool's count under
``auto_topology.cells: N``, :func:`edgespec.sim.setup.cells.count_step`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from edgespec.config import ConfigError, apply_overrides
from edgespec.config.errors import in_context
from edgespec.errors import UserInputError
from edgespec.metrics.types import SystemMetrics
from edgespec.metrics.violation_rates import (
    class_violation_rate,
    decided_violation_rate,
    violation_rate,
)
from edgespec.policies.contracts import PolicyContractError
from edgespec.sweeps.grid import Runner, named_at, override_text
from edgespec.sweeps.progress import progress_bar

Violation = Callable[[SystemMetrics], float]
Check = Callable[[dict[str, Any]], object]
"""Validates one probe's scenario mapping (raising ``ConfigError``) without running it."""


def field_path(key: str) -> str:
    """An override key as a config error names the field: a numeric segment is a list
    index (``auto_topology.devices.0.count`` → ``auto_topology.devices[0].count``)."""
    path = ""
    for part in key.strip().split("."):
        if part.isascii() and part.isdigit() and path:
            path += f"[{part}]"
        else:
            path = f"{path}.{part}" if path else part
    return path


@dataclass(frozen=True, slots=True)
class ProbeStep:
    """The step between the values a search may probe, and why: ``(2, "auto_topology.cells")``
    probes 2, 4, 6…; the default, every integer."""

    size: int = 1
    why: str = ""


def overall_violation(count_sure_misses: bool = False) -> Violation:
    """Every class's violation rate for Cap(τ) (:func:`violation_rate`, or with
    ``count_sure_misses`` :func:`decided_violation_rate`); 1.0 when no request finished
    within the run but some with a target were running, as :func:`class_violation` does
    (an overloaded probe: the rate there is undefined, and the search went on only per
    class). With no target anywhere the rate's own error stands."""
    rate = decided_violation_rate if count_sure_misses else violation_rate

    def violation(metrics: SystemMetrics) -> float:
        running = sum(c.num_unfinished_with_target or 0 for c in metrics.slo_classes)
        return 1.0 if metrics.num_requests == 0 and running else rate(metrics)

    return violation


def class_violation(slo_class: str, count_sure_misses: bool = False) -> Violation:
    """One class's violation rate for Cap(τ) of that class (:func:`class_violation_rate`);
    1.0 when none of its requests finished within the run (the load is beyond what the
    system serves in that time)."""
    rate = class_violation_rate(slo_class, count_sure_misses)

    def violation(metrics: SystemMetrics) -> float:
        stats = next((c for c in metrics.slo_classes if c.slo_class == slo_class), None)
        if stats is None or stats.num_requests == 0:  # none finished (some may be running)
            return 1.0
        return rate(metrics)

    return violation


@dataclass(frozen=True, slots=True)
class CapacityProbe:
    """One run at ``value``: its violation rate and whether that is within ε."""

    value: int
    violation_rate: float
    feasible: bool
    metrics: SystemMetrics

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "violation_rate": self.violation_rate,
            "feasible": self.feasible,
            "metrics": self.metrics.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class CapacityResult:
    """Outcome of ``capacity_search``.

    ``capacity`` is the largest probed value in [lo, hi] with violation rate ≤ ε, or
    ``None`` when even ``lo`` violates. ``at_upper_bound`` is true when ``hi`` itself was
    feasible (the true capacity may be larger). ``probes`` are in the order they ran.
    """

    key: str
    epsilon: float
    lo: int
    hi: int
    capacity: int | None
    at_upper_bound: bool
    probes: tuple[CapacityProbe, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "epsilon": self.epsilon,
            "lo": self.lo,
            "hi": self.hi,
            "capacity": self.capacity,
            "at_upper_bound": self.at_upper_bound,
            "probes": [p.to_dict() for p in self.probes],
        }


def capacity_search(
    base: Mapping[str, Any],
    key: str,
    run: Runner,
    *,
    epsilon: float,
    lo: int,
    hi: int,
    violation: Violation = violation_rate,
    progress: bool = True,
    check: Check | None = None,
    step: ProbeStep = ProbeStep(),
) -> CapacityResult:
    """Largest ``key`` value in [lo, hi] whose run has ``violation(metrics) <= epsilon``.

    Probes ``lo`` (if it violates, capacity is ``None``), then ``hi`` (if it does not,
    capacity is ``hi``), then bisects the feasible/infeasible bracket: at most
    2 + ⌈log2((hi − lo) / step)⌉ runs, every value a multiple of ``step`` (so are ``lo``
    and ``hi``, or the search is refused before any run, saying the step).
    ``violation`` defaults to the overall SLO violation rate; use :func:`class_violation`
    for one class's Cap(τ). ``check`` (``edgespec sim``'s:
    :func:`edgespec.sim.commands.checks.check_scenario_dict`) validates the scenario at
    ``lo`` and at ``hi`` before any run, so a bound the scenario refuses (a fleet over its
    limit) fails at once, at its field. Errors name ``key`` as a field
    (:func:`field_path`).
    """
    if not 0.0 <= epsilon <= 1.0:
        raise ConfigError("epsilon", f"must be in [0, 1], got {epsilon}")
    where, size = field_path(key), _checked_step(base, key, lo, hi, check, step)
    probes: list[CapacityProbe] = []
    max_runs = 2 + max(0, ((hi - lo) // size - 1).bit_length())

    with progress_bar(progress) as bar:
        task = bar.add_task(f"capacity {key}", total=max_runs)

        def probe(value: int) -> bool:
            bar.update(task, description=f"capacity {key}={value}")
            metrics = _probed(run, base, key, value)
            try:
                rate = violation(metrics)
            except ValueError as exc:  # no request with an SLO target finished
                raise ConfigError(
                    where,
                    f"capacity probe at {value}: {exc}; give the scenario slo_classes "
                    "and a duration_s long enough for requests to finish",
                ) from exc
            feasible = rate <= epsilon
            probes.append(CapacityProbe(value, rate, feasible, metrics))
            bar.advance(task)
            return feasible

        steps, at_upper = bisect_capacity(lambda k: probe(k * size), lo // size, hi // size)
        bar.update(task, total=len(probes), completed=len(probes))
    capacity = None if steps is None else steps * size
    return CapacityResult(key, epsilon, lo, hi, capacity, at_upper, tuple(probes))


def _checked_step(
    base: Mapping[str, Any], key: str, lo: int, hi: int, check: Check | None, given: ProbeStep
) -> int:
    """``given``'s size, after refusing bounds out of order or off that step, and
    (``check``) a scenario at either bound that the scenario refuses."""
    where, step = field_path(key), given.size
    if lo < 0 or hi < lo:
        raise ConfigError(where, f"need 0 <= lo <= hi, got lo={lo}, hi={hi}")
    for bound, value in (("lo", lo), ("hi", hi)):
        if value % step:
            inside = -(-value // step) * step if bound == "lo" else value // step * step
            raise ConfigError(
                where,
                f"{bound}={value} is not a multiple of {given.why} ({step}): the search "
                f"probes only the values the scenario takes, in steps of {step}: give "
                f"{bound}={inside}",
            )
        if check is not None:
            try:
                check(apply_overrides(base, [override_text(key, value)]))
            except ConfigError as exc:
                raise in_context(exc, f"at {bound}={value}") from exc
    return step


def bisect_capacity(feasible: Callable[[int], bool], lo: int, hi: int) -> tuple[int | None, bool]:
    """(the largest value in [lo, hi] that ``feasible`` accepts, whether it is ``hi``),
    assuming feasibility only falls as the value grows: ``lo`` probed first (infeasible:
    None), then ``hi``, then the bracket bisected."""
    if not feasible(lo):
        return None, False
    if lo == hi or feasible(hi):
        return hi, True
    good, bad = lo, hi
    while bad - good > 1:
        mid = (good + bad) // 2
        if feasible(mid):
            good = mid
        else:
            bad = mid
    return good, False


def _probed(run: Runner, base: Mapping[str, Any], key: str, value: int) -> SystemMetrics:
    """``run`` at ``key=value``; its refusal or a policy's broken contract names the probe
    (``at capacity probe key=value: ...``), as a sweep's names its point."""
    probe = override_text(key, value)
    try:
        return run(apply_overrides(base, [probe]))
    except (UserInputError, PolicyContractError) as exc:
        raise named_at(exc, f"at capacity probe {probe}") from exc
