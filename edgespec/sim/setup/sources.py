"""The data files a scenario names, loaded for :mod:`edgespec.sim.setup.resolve`: the
workload trace, the acceptance model's traces, the length table, and the features a stop
predictor replays. Errors name the scenario field (``workload.trace``,
``acceptance.traces[1]``, ``workload.dataset``, ``stop_predictor``)."""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from edgespec.config import ConfigError
from edgespec.metrics.formatting import plain
from edgespec.sim.model.acceptance import (
    AcceptanceModel,
    DecayAcceptance,
    IidAcceptance,
    TraceAcceptance,
)
from edgespec.sim.model.stop_model import ReplayFeatures
from edgespec.sim.setup.scenario import Scenario
from edgespec.sim.setup.workload import (
    ARRIVAL_KEYS,
    LengthTable,
    TraceEntry,
    bundled_traces,
    load_length_table,
    load_trace,
    resolve_trace,
)


def load_workload_trace(scenario: Scenario) -> tuple[TraceEntry, ...]:
    """The workload trace's entries (``()`` unless the workload is a trace); a request of
    an SLO class the scenario does not have is refused, and so is a trace whose every
    request arrives after ``duration_s`` (its times in another unit than milliseconds, or
    wall-clock timestamps: the run simulated none of them, and exited 0)."""
    if scenario.workload.kind != "trace" or scenario.workload.trace is None:
        return ()
    try:
        entries = load_trace(resolve_trace(scenario.workload.trace))
    except ConfigError as exc:
        raise ConfigError("workload.trace", str(exc)) from exc
    for entry in entries:
        if entry.slo_class is not None and entry.slo_class not in scenario.slo_classes:
            raise ConfigError(
                "workload.trace",
                f"request {entry.request_id!r} has unknown slo_class {entry.slo_class!r}",
            )
    if num_arrivals_after(entries, scenario.duration_s) == len(entries):
        first_s, duration_s = entries[0].arrival_s, scenario.duration_s
        raise ConfigError(
            "workload.trace",
            f"{scenario.workload.trace}: every request arrives after duration_s "
            f"({plain(duration_s, 6)} s), the first at {plain(first_s * 1000, 6)} ms "
            f"({plain(first_s, 6)} s); a trace's {' / '.join(ARRIVAL_KEYS)} is in milliseconds",
        )
    return entries


def num_arrivals_after(trace: Sequence[TraceEntry], duration_s: float) -> int:
    """How many of ``trace``'s requests (sorted by arrival) arrive after ``duration_s``:
    a run to ``duration_s`` never simulates them."""
    return len(trace) - bisect.bisect_right(trace, duration_s, key=lambda e: e.arrival_s)


@dataclass(frozen=True, slots=True)
class LateArrivals:
    """A trace workload's requests that arrive after ``duration_s``, which a run leaves
    out (:func:`late_arrivals`)."""

    trace: str
    duration_s: float
    num_requests: int

    @property
    def warning(self) -> str:
        """What a command says of them, in one line (after its name)."""
        return (
            f"warning: {self.trace}: {plain(self.num_requests)} trace requests arrive after "
            f"duration_s ({plain(self.duration_s, 6)} s) and are not simulated"
        )


def late_arrivals(scenario: Scenario, num_requests: int) -> LateArrivals | None:
    """``num_requests`` of ``scenario``'s workload trace arriving after its ``duration_s``
    (:func:`num_arrivals_after`: a run's, or its resolved trace's), or ``None`` for none."""
    if not num_requests:
        return None
    return LateArrivals(str(scenario.workload.trace), scenario.duration_s, num_requests)


def load_acceptance(scenario: Scenario, trace: tuple[TraceEntry, ...] = ()) -> AcceptanceModel:
    """The scenario's acceptance model. ``kind: trace`` without ``traces`` replays the
    bundled real traces (``edgespec/data/traces/*.jsonl``) for requests that carry no
    ``acceptance_seq`` of their own (sequences are assigned round-robin by request)."""
    acc = scenario.acceptance
    if acc.kind == "iid":
        return IidAcceptance(acc.alpha)
    if acc.kind == "decay":
        return DecayAcceptance(acc.rates)
    names = [str(p) for p in bundled_traces()] if not acc.traces else list(acc.traces)
    pool: list[tuple[int, ...]] = []
    features: list[tuple[tuple[float, ...], ...] | None] = []
    rejections: list[Mapping[int, tuple[tuple[float, ...], ...]] | None] = []
    for i, name in enumerate(names):
        try:
            entries = load_trace(resolve_trace(name))
        except ConfigError as exc:
            raise ConfigError(f"acceptance.traces[{i}]", str(exc)) from exc
        if any(e.tree_rounds for e in entries):
            raise ConfigError(
                f"acceptance.traces[{i}]",
                "a token-tree trace replays its captured rounds only as the workload "
                "(workload: {kind: trace, trace: FILE})",
            )
        kept = [e for e in entries if e.acceptance_seq]
        pool.extend(e.acceptance_seq for e in kept if e.acceptance_seq)
        features.extend(e.draft_features for e in kept)
        rejections.extend(e.rejection_features for e in kept)
    if acc.traces and not pool:
        raise ConfigError("acceptance.traces", "the traces hold no acceptance_seq")
    if not pool and (not trace or any(e.acceptance_seq is None for e in trace)):
        raise ConfigError(
            "acceptance.traces",
            "trace acceptance needs acceptance_seq: none in the workload, none given here, "
            "and none bundled in edgespec/data/traces/",
        )
    return TraceAcceptance(tuple(pool), tuple(features), tuple(rejections))


def load_lengths(scenario: Scenario) -> LengthTable | None:
    """The closed-loop or Poisson workload's length table (inline, or ``dataset``'s);
    ``None`` for a trace workload."""
    wl = scenario.workload
    if wl.kind == "trace":
        return None
    if wl.prompt_tokens:
        return LengthTable("inline", wl.prompt_tokens, wl.output_tokens)
    return load_length_table(wl.dataset)


def stop_features(
    scenario: Scenario, trace: tuple[TraceEntry, ...], acceptance: AcceptanceModel
) -> tuple[ReplayFeatures, ...] | None:
    """Every acceptance sequence with features (the workload trace's and the
    trace-acceptance pool's), for the scenario's stop predictor; ``None`` without one."""
    if scenario.stop_predictor is None:
        return None
    if scenario.mode != "distributed":
        raise ConfigError("stop_predictor", f"applies to distributed drafting, not {scenario.mode}")
    found: list[ReplayFeatures] = []
    sources = [(e.acceptance_seq, e.draft_features, e.rejection_features) for e in trace]
    if isinstance(acceptance, TraceAcceptance):
        pool = acceptance
        sources += zip(pool.pool, pool.pool_features, pool.pool_rejections, strict=False)
    for seq, rows, after in sources:
        if seq is not None and rows is not None:
            found.append(ReplayFeatures(seq, rows, after))
    return tuple(found)
