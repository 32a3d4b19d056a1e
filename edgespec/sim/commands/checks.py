"""What ``edgespec sim`` checks before any run, beyond a scenario's own validation.

* Named entries that the command line adds and nothing uses (:func:`check_added_entries`):
  ``links.defualt.rtt_ms=500`` added a link no device pool uses, so the run was the
  default one; ``slo_classes.platnum=1`` added a class no device pool's ``slo_mix`` names.
  A file may define entries it does not use (a reproduction defines every class and gives
  a run one of them), so only an entry new on the command line (an override, a sweep's
  key) is refused, naming it and the closest name the pools use. SLO classes are not
  checked under a trace workload: its requests may name any class.
* A sweep's every point and a capacity search's bounds built as their runs would build
  them, short of running (:func:`check_scenario_dict`), so a bad one is refused before
  the first run, not after the points before it ran (and ``record_rounds: true``, which
  their runs would not write); a trace's requests after
  ``duration_s`` said once per trace and duration (:class:`LateArrivalWarnings`).
* A server pool's profile used beyond the batch size or context it measured
  (:func:`say_profile_ranges`), said once before the run.
* A replayed trace captured otherwise than the scenario samples (temperature, cuts:
  :func:`say_trace_sampling`): its acceptance is the capture's.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from edgespec.config import ConfigError, OverrideError, parse_override
from edgespec.config.overrides import shown
from edgespec.core.sampling_cuts import SamplingCuts
from edgespec.errors import UserInputError, did_you_mean
from edgespec.metrics.formatting import plain
from edgespec.sim.setup.build import check_buildable
from edgespec.sim.setup.scenario import Scenario, scenario_from_dict
from edgespec.sim.setup.sources import LateArrivals, late_arrivals, num_arrivals_after
from edgespec.sim.setup.workload import TraceEntry

NAMED_SECTIONS: Mapping[str, tuple[str, str]] = {
    "links": ("link", "no device pool uses; the pools' links"),
    "slo_classes": ("SLO class", "no device pool's slo_mix names; their classes"),
}
"""The scenario sections whose entries the device pools use by name: what an entry is
called, and what is said of an unused one."""


def used_names(scenario: Scenario) -> dict[str, set[str]]:
    """The names the device pools use, by :data:`NAMED_SECTIONS` section (no SLO classes
    under a trace workload, whose requests may name any)."""
    pools = scenario.auto_topology.devices
    used = {"links": {pool.link for pool in pools}}
    if scenario.workload.kind != "trace":
        used["slo_classes"] = {cls for pool in pools for cls in pool.slo_mix}
    return used


def check_added_entries(
    given: Mapping[str, Any], overrides: Sequence[str], scenario: Scenario, what: str = "override"
) -> None:
    """Refuse an entry of a :data:`NAMED_SECTIONS` section that one of ``overrides`` adds to
    ``given`` (the scenario mapping before them) and that no device pool of ``scenario``
    (the scenario after them) uses: ``override 'links.defualt.rtt_ms=500': adds link
    'defualt', which no device pool uses; the pools' links: ['default'] (did you mean
    'default'?)``. ``what``: what gave the overrides (``--sweep`` for a sweep's point)."""
    used = used_names(scenario)
    for text in overrides:
        keys, value = parse_override(text)
        if keys[0] not in used:
            continue
        names = keys[1:2] if len(keys) > 1 else list(value) if isinstance(value, Mapping) else []
        before = given.get(keys[0])
        for name in names:
            if (isinstance(before, Mapping) and name in before) or name in used[keys[0]]:
                continue
            kind, unused = NAMED_SECTIONS[keys[0]]
            known = sorted(used[keys[0]])
            raise OverrideError(
                shown(text),
                f"adds {kind} {shown(str(name))!r}, which {unused}: {known}"
                + did_you_mean(str(name), known),
                what,
            )


def check_scenario_dict(
    data: Mapping[str, Any], point: Sequence[str] = (), kind: str = "--sweep"
) -> LateArrivals | None:
    """``data`` with a sweep ``point``'s overrides validated, the entries the point adds
    used (:func:`check_added_entries`), no ``record_rounds`` (``kind``'s runs keep no
    records, so none would be written), and built as its run would build it, short of
    running (:func:`edgespec.sim.setup.build.check_buildable`): each point of a sweep, and
    a capacity search's bounds (``data`` alone, ``kind`` ``--capacity``), before any run.
    Its trace's requests after ``duration_s`` returned (:class:`LateArrivalWarnings` says
    them)."""
    scenario = scenario_from_dict(data, point)
    check_added_entries(data, point, scenario, "--sweep")
    if scenario.record_rounds:  # as --rounds is refused there (commands/flags.py)
        raise ConfigError(
            "record_rounds",
            f"applies only to a plain run or --shards, not to {kind}: its runs keep no "
            "round records; drop it (record_rounds=false)",
        )
    trace = check_buildable(scenario).trace
    return late_arrivals(scenario, num_arrivals_after(trace, scenario.duration_s))


def say_profile_ranges(scenario: Scenario) -> None:
    """Say on stderr a server pool whose model and KV budget are more than its card's
    memory, and, once each, a server pool's profile used beyond what it measured: its
    pool's ``max_batch_size`` above the profile's ``measured_max_batch_size``, or its
    ``kv_budget_tokens`` (the longest context a request can reach) above its
    ``measured_max_context_tokens`` (:func:`edgespec.hardware.profile_info.range_warning`;
    the profile loaded, with its errors, when the scenario is resolved)."""
    from edgespec.hardware.profile_info import profile_info, range_warning

    said: set[str] = set()
    for pool in scenario.auto_topology.servers:
        _say_memory_fit(pool)
        profile = pool.cost_model.profile
        if pool.cost_model.kind == "roofline" or profile is None:
            continue
        try:
            info = profile_info(profile)
        except ConfigError:  # refused where the scenario is resolved, at its field
            continue
        if info.role == "draft":  # refused there too
            continue
        warning = range_warning(info, pool.max_batch_size, pool.kv_budget_tokens)
        if warning is not None and warning not in said:
            said.add(warning)
            print(f"edgespec sim: {warning}", file=sys.stderr)


def _say_memory_fit(pool: Any) -> None:
    """Say on stderr when ``pool``'s model and KV budget are more than its card's memory
    (:func:`edgespec.hardware.memory_fit.memory_fit_warning`; presets refused elsewhere)."""
    from edgespec.hardware.memory_fit import memory_fit_warning
    from edgespec.hardware.presets import load_architecture, load_hardware

    try:
        model, card = load_architecture(pool.target_model), load_hardware(pool.hardware)
    except ConfigError:  # refused at its field where the scenario is resolved
        return
    if (line := memory_fit_warning(pool.name, model, card, pool.kv_budget_tokens)) is not None:
        print(f"edgespec sim: {line}", file=sys.stderr)


def trace_sampling_warnings(scenario: Scenario) -> list[str]:
    """One line per replayed trace (``acceptance.kind: trace``: the workload's trace, the
    pool's traces) captured otherwise than the scenario samples (its temperature and, when
    it samples, its cuts): its rounds accept as the capture's did, greedy or sampled
    (``edgespec trace --temperature``). The bundled traces, greedy captures, are one line,
    and read only when the scenario samples and some request draws from them."""
    from edgespec.sim.setup.sources import pool_traces
    from edgespec.sim.setup.workload import load_trace, resolve_trace

    if scenario.acceptance.kind != "trace":
        return []
    wanted = _sampling(scenario.temperature, scenario.cuts)
    sources: list[tuple[str, Sequence[TraceEntry]]] = []
    pooled = True  # some request draws from the pool
    if scenario.workload.kind == "trace" and scenario.workload.trace is not None:
        trace = load_trace(resolve_trace(str(scenario.workload.trace)))
        sources.append((f"workload.trace ({scenario.workload.trace})", trace))
        pooled = any(e.acceptance_seq is None for e in trace)
    if pooled and scenario.acceptance.traces:
        names = scenario.acceptance.traces
        sources += [
            (f"{w} ({n})", e) for (w, e), n in zip(pool_traces(scenario), names, strict=True)
        ]
    elif scenario.temperature > 0 and pooled:
        bundled = [e for _, entries in pool_traces(scenario) for e in entries]
        sources.append(("the bundled acceptance traces (edgespec/data/traces/)", bundled))
    said = []
    for what, entries in sources:
        captured = (_sampling(e.temperature, e.cuts) for e in entries if e.acceptance_seq)
        other = next((c for c in captured if c != wanted), None)
        if other is not None:
            said.append(
                f"warning: {what}: captured {_described(other)}, replayed "
                f"{_described(wanted)}: its rounds accept as the capture's did (edgespec "
                f"trace {_trace_flags(wanted)} captures as the scenario samples)"
            )
    return said


def _sampling(temperature: float, cuts: SamplingCuts) -> tuple[float, SamplingCuts]:
    """How a run samples: its temperature and, unless greedy, its cuts."""
    return temperature, cuts if temperature > 0 else SamplingCuts()


def _described(sampling: tuple[float, SamplingCuts]) -> str:
    temperature, cuts = sampling
    if temperature == 0:
        return "greedy"
    described = cuts.described()
    return f"at temperature {plain(temperature)}" + (f" with {described}" if described else "")


def _trace_flags(sampling: tuple[float, SamplingCuts]) -> str:
    temperature, cuts = sampling
    flags = [f"--temperature {plain(temperature)}"]
    return " ".join(
        flags + [f"--{n.replace('_', '-')} {plain(v)}" for n, v in cuts.cutting().items()]
    )


def unread_acceptance_warning(scenario: Scenario) -> str | None:
    """The warning for a workload trace whose requests carry their own ``acceptance_seq``
    under an acceptance model that does not read them (``iid``, ``decay``: the default), so
    a captured run's acceptance is replaced by the model's without a word; ``None`` else."""
    from edgespec.sim.setup.workload import load_trace, resolve_trace

    workload, kind = scenario.workload, scenario.acceptance.kind
    if kind == "trace" or workload.kind != "trace" or workload.trace is None:
        return None
    trace = load_trace(resolve_trace(str(workload.trace)))
    num_carrying = sum(1 for e in trace if e.acceptance_seq)
    if not num_carrying:
        return None
    return (f"warning: workload.trace ({workload.trace}): {num_carrying} of its "
            f"{len(trace)} requests carry an acceptance_seq, which acceptance.kind {kind} "
            "does not replay (its model draws every round's outcome): set acceptance.kind: "
            "trace to replay them")  # fmt: skip


def say_trace_sampling(scenario: Scenario) -> None:
    """Say :func:`unread_acceptance_warning` and :func:`trace_sampling_warnings` on stderr,
    before the run; a trace that cannot be read is left to the run, which refuses it at its
    field."""
    try:
        unread = unread_acceptance_warning(scenario)
        lines = ([unread] if unread else []) + trace_sampling_warnings(scenario)
    except ConfigError:
        return
    for line in lines:
        print(f"edgespec sim: {line}", file=sys.stderr)


class LateArrivalWarnings:
    """Says each distinct :class:`~edgespec.sim.setup.sources.LateArrivals` once, on stderr
    (``edgespec sim: warning: t.jsonl: 2 trace requests arrive after duration_s (2 s) and
    are not simulated``): a plain run's, and those of a sweep's points or a capacity
    search's bounds, once per trace and ``duration_s`` however many points share them."""

    def __init__(self) -> None:
        self._said: set[LateArrivals] = set()

    def __call__(self, late: LateArrivals | None) -> None:
        if late is not None and late not in self._said:
            self._said.add(late)
            print(f"edgespec sim: {late.warning}", file=sys.stderr)


def check_capacity_workload(scenario: Scenario) -> None:
    """Refuse, before any run, a capacity search of a workload whose load a device count
    does not scale: under ``poisson`` ``rate_per_s`` is the fleet's total and a trace fixes
    the arrivals, so more devices spread the same requests, the violation rate does not
    grow with the count, and the bisection (which assumes it does) answers nothing."""
    kind = scenario.workload.kind
    if kind != "closed_loop":
        raise ConfigError(
            "workload.kind",
            f"--capacity needs a closed_loop workload, where each device adds load; under "
            f"{kind} " + ("rate_per_s is the whole fleet's" if kind == "poisson" else
                          "the trace fixes the arrivals") +
            ", so the violation rate does not grow with the device count the search bisects",
        )  # fmt: skip


def check_class_measured(scenario: Scenario, slo_class: str) -> None:
    """Refuse, before any run, a capacity search of ``slo_class`` (``--slo-class``) that no
    run can measure: the scenario has no such class, the class has no token-speed target,
    or (but under a trace workload, whose requests name their classes) no device pool's
    ``slo_mix`` gives it a share."""
    targets = scenario.slo_classes
    if slo_class not in targets:
        known = sorted(targets)
        raise UserInputError(
            f"--slo-class {slo_class}: the scenario has no such SLO class; known: {known}"
            + did_you_mean(slo_class, known)
        )
    if targets.get(slo_class) is None:
        measured = sorted(c for c, target in targets.items() if target is not None)
        others = f" or search a class that has one: {measured}" if measured else ""
        raise ConfigError(
            f"slo_classes.{slo_class}",
            f"class {slo_class} has no token-speed target, so its capacity has no violation "
            f"rate to bound; give it one (slo_classes.{slo_class}=<tok/s>){others}",
        )
    pools = scenario.auto_topology.devices
    if scenario.workload.kind == "trace" or any(p.slo_mix.get(slo_class) for p in pools):
        return
    shared = sorted({c for p in pools for c, share in p.slo_mix.items() if share})
    raise ConfigError(
        "auto_topology.devices",
        f"no device pool's slo_mix gives class {slo_class} a share, so none of its requests "
        f"is of class {slo_class}; add it to a pool's slo_mix or search one of the pools' "
        f"classes: {shared}",
    )
