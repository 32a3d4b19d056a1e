"""The data files a scenario names, loaded for :mod:`edgespec.sim.setup.resolve`: the
workload trace, the acceptance model's traces, the length table, and the features a stop
predictor replays. Errors name the scenario field (``workload.trace``,
``acceptance.traces[1]``, ``workload.dataset``, ``stop_predictor``)."""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

from edgespec.config import ConfigError
from edgespec.config.overrides import shown
from edgespec.errors import did_you_mean
from edgespec.metrics.formatting import plain
from edgespec.sim.model.acceptance import (
    AcceptanceModel,
    DecayAcceptance,
    IidAcceptance,
    TraceAcceptance,
    redrawn_sequence,
)
from edgespec.sim.model.stop_model import ReplayFeatures
from edgespec.sim.setup.lengths import LengthTable, load_length_table
from edgespec.sim.setup.scenario import Scenario
from edgespec.sim.setup.trace_fields import ARRIVAL_KEYS
from edgespec.sim.setup.workload import (
    TraceEntry,
    bundled_traces,
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
            raise ConfigError("workload.trace", unknown_class(entry, entry.slo_class, scenario))
    if num_arrivals_after(entries, scenario.duration_s) == len(entries):
        first_s, duration_s = entries[0].arrival_s, scenario.duration_s
        raise ConfigError(
            "workload.trace",
            f"{scenario.workload.trace}: every request arrives after duration_s "
            f"({plain(duration_s, 6)} s), the first at {plain(first_s * 1000, 6)} ms "
            f"({plain(first_s, 6)} s); a trace's {' / '.join(ARRIVAL_KEYS)} is in milliseconds",
        )
    return redrawn(scenario, entries)


def record_name(entry: TraceEntry) -> str:
    """A trace's request as a message names it: its ``file:line`` and its id as the file
    gives it (the line, when the record has none)."""
    named = f"request {shown(entry.request_id)!r}"
    return f"{entry.where}: {named}" if entry.where else named


def unknown_class(entry: TraceEntry, name: str, scenario: Scenario) -> str:
    """What is wrong with a trace request's SLO class ``name`` that the scenario lacks, and
    the two ways out: the class added (the request's own class is used, so no pool's
    ``slo_mix`` needs it), or the trace captured with the scenario's classes."""
    classes = list(scenario.slo_classes)
    return (
        f"{record_name(entry)} has slo_class {shown(name)!r}, which slo_classes does not have "
        f"(its classes: {sorted(classes)}){did_you_mean(name, classes)}; add the class "
        f"(slo_classes.{shown(name)}=TOK_S, or null for no target; a trace request keeps its "
        "own class, so no pool's slo_mix needs it) or give the trace the scenario's "
        f"classes (edgespec trace --slo-classes {','.join(classes)})"
    )


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
    kept = [e for _, entries in pool_traces(scenario) for e in entries]  # each has a sequence
    pool = [e.acceptance_seq for e in kept if e.acceptance_seq]
    if acc.traces and not pool:
        raise ConfigError("acceptance.traces", "the traces hold no acceptance_seq")
    pooled = not trace or any(e.acceptance_seq is None for e in trace)  # some draw from it
    if not pool and pooled:
        raise ConfigError(
            "acceptance.traces",
            "trace acceptance needs acceptance_seq: none in the workload, none given here, "
            "and none bundled in edgespec/data/traces/",
        )
    captures = [e for e in trace if e.acceptance_seq] + (kept if pooled else [])  # replayed
    if acc.sampled_draws == "redrawn" and all(e.acceptance_prob is None for e in captures):
        raise ConfigError(
            "acceptance.sampled_draws",
            "redrawn draws each position from its acceptance_prob, and no replayed trace "
            "has one (a sampled capture's: edgespec trace --temperature T)",
        )
    seed = scenario.seed if acc.sampled_draws == "redrawn" else None
    return TraceAcceptance(
        tuple(pool),
        tuple(e.draft_features for e in kept),
        tuple(e.rejection_features for e in kept),
        tuple(e.acceptance_prob for e in kept),
        seed,
        measured_row_entries(scenario, captures),
    )


def measured_row_entries(scenario: Scenario, captures: Sequence[TraceEntry]) -> float:
    """The mean of the ``draft_row_entries`` of ``captures`` made at the scenario's sampling
    (its temperature and cuts), over every position they recorded; 0 when the scenario is
    greedy or none recorded them."""
    if scenario.temperature == 0:
        return 0.0
    counts = [
        n
        for e in captures
        if e.draft_row_entries is not None
        and (e.temperature, e.cuts) == (scenario.temperature, scenario.cuts)
        for n in e.draft_row_entries
    ]
    return sum(counts) / len(counts) if counts else 0.0


def pool_traces(scenario: Scenario) -> Iterator[tuple[str, tuple[TraceEntry, ...]]]:
    """Trace acceptance's traces (``acceptance.traces``, default the bundled ones), each
    with its field and its requests that have an ``acceptance_seq``: its share of the pool
    of sequences, in pool order."""
    acc = scenario.acceptance
    names = [str(p) for p in bundled_traces()] if not acc.traces else list(acc.traces)
    for i, name in enumerate(names):
        where = f"acceptance.traces[{i}]"
        try:
            entries = load_trace(resolve_trace(name))
        except ConfigError as exc:
            raise ConfigError(where, str(exc)) from exc
        if any(e.tree_rounds for e in entries):
            raise ConfigError(
                where,
                "a token-tree trace replays its captured rounds only as the workload "
                "(workload: {kind: trace, trace: FILE})",
            )
        yield where, tuple(e for e in entries if e.acceptance_seq)


def load_lengths(scenario: Scenario) -> LengthTable | None:
    """The closed-loop or Poisson workload's length table (inline, or ``dataset``'s);
    ``None`` for a trace workload."""
    wl = scenario.workload
    if wl.kind == "trace":
        return None
    if wl.prompt_tokens is not None and wl.output_tokens is not None:
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


STOP_REMEDY = (
    "; give confusion_tpr and confusion_fpr (the stand-in for requests without them) or "
    "replay traces that have draft_features (acceptance.kind: trace, or a trace workload; "
    "edgespec trace records them for a neural --draft, not for --draft ngram)"
)
"""What a stop predictor with nothing to replay for some request is told to give."""


def check_replayable(
    scenario: Scenario, trace: tuple[TraceEntry, ...], acceptance: AcceptanceModel
) -> None:
    """A stop predictor's policy without the confusion stand-in needs ``draft_features``
    for every chain request's acceptance sequence (its own in the workload trace, else the
    trace-acceptance pool's, every one of which some request may draw): a ConfigError at
    ``stop_predictor`` naming the first request without them (its trace's field, file,
    line and id), or the acceptance kind that draws outcomes with none. Checked as a run's
    stop model is built (:func:`edgespec.sim.setup.build.build_parts`), after its policy:
    an unknown policy name is said first."""
    stop = scenario.stop_predictor
    if stop is None or stop.policy is None or stop.confusion_tpr is not None:
        return
    said = f"policy {stop.policy.name!r} replays each request's draft_features, and "
    drawn = f"acceptance.kind {scenario.acceptance.kind} draws"
    pooled = "" if scenario.workload.kind == "trace" else f"{drawn} each round's outcome"
    for entry in trace:
        if entry.tree_rounds is not None:
            continue  # a token-tree request replays its captured rounds
        if entry.acceptance_seq is None:
            own = f"workload.trace {record_name(entry)} has no acceptance_seq"
            pooled = pooled or f"{own}: {drawn} its rounds' outcomes"
        elif entry.draft_features is None:
            said += f"workload.trace {record_name(entry)} has none"
            raise ConfigError("stop_predictor", said + STOP_REMEDY)
    if not pooled:
        return
    if not isinstance(acceptance, TraceAcceptance):
        raise ConfigError("stop_predictor", f"{said}{pooled}, with none to replay{STOP_REMEDY}")
    if all(rows is not None for rows in acceptance.pool_features):
        return
    for where, kept in pool_traces(scenario):
        for entry in kept:
            if entry.draft_features is None:
                said += f"{where} {record_name(entry)} has none"
                raise ConfigError("stop_predictor", said + STOP_REMEDY)


def redrawn(scenario: Scenario, entries: tuple[TraceEntry, ...]) -> tuple[TraceEntry, ...]:
    """The workload trace's ``entries`` as ``acceptance.sampled_draws`` replays them: as
    captured, or, ``redrawn``, each entry that has an ``acceptance_prob`` given an
    ``acceptance_seq`` drawn from it (:func:`~edgespec.sim.model.acceptance.redrawn_sequence`,
    keyed by the run's seed and the entry's place in the trace; one without α, a greedy
    capture, as captured)."""
    if scenario.acceptance.kind != "trace" or scenario.acceptance.sampled_draws != "redrawn":
        return entries
    return tuple(
        replace(e, acceptance_seq=redrawn_sequence(e.acceptance_prob, scenario.seed, 0, i))
        if e.acceptance_prob is not None and e.acceptance_seq is not None
        else e
        for i, e in enumerate(entries)
    )
