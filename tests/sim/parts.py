"""The simulator's parts built one at a time, for the tests that look at one part.

A run resolves its scenario whole (:func:`edgespec.sim.setup.resolve.resolve`) and builds
every part in one pass (:func:`edgespec.sim.setup.build.build_run`); these build a single
part through the same library steps.
"""

from __future__ import annotations

from collections.abc import Sequence

from edgespec.sim.model.acceptance import AcceptanceModel
from edgespec.sim.model.entities import DeviceState, ServerState
from edgespec.sim.model.layout import Layout
from edgespec.sim.model.stop_model import StopModel
from edgespec.sim.setup import build
from edgespec.sim.setup.build import Policies
from edgespec.sim.setup.lengths import LengthTable
from edgespec.sim.setup.resolve import resolve
from edgespec.sim.setup.scenario import Scenario
from edgespec.sim.setup.sources import (
    load_acceptance,
    load_lengths,
    load_workload_trace,
    stop_features,
)
from edgespec.sim.setup.workload import TraceEntry


def build_fleet(
    scenario: Scenario, cells: Sequence[int] | None = None, colocated: bool | None = None
) -> tuple[list[DeviceState], list[ServerState], Layout]:
    """The fleet of ``cells`` (all when ``None``) of ``scenario`` resolved with
    ``colocated`` (default: in ``mode: fused``) co-located drafts."""
    if colocated is None:
        colocated = scenario.mode == "fused"
    return build.build_fleet(resolve(scenario, colocated=colocated), cells)


def build_entities(
    scenario: Scenario, colocated: bool | None = None
) -> tuple[list[DeviceState], list[ServerState]]:
    """Every device and server of ``scenario`` (:func:`build_fleet`)."""
    devices, servers, _ = build_fleet(scenario, None, colocated)
    return devices, servers


def build_trace(scenario: Scenario) -> tuple[TraceEntry, ...]:
    return load_workload_trace(scenario)


def build_acceptance(scenario: Scenario, trace: tuple[TraceEntry, ...] = ()) -> AcceptanceModel:
    return load_acceptance(scenario, trace)


def build_lengths(scenario: Scenario) -> LengthTable | None:
    return load_lengths(scenario)


def build_stop_model(
    scenario: Scenario,
    policies: Policies,
    trace: tuple[TraceEntry, ...],
    acceptance: AcceptanceModel,
) -> StopModel | None:
    """The scenario's stop predictor over every acceptance sequence with features (the
    workload trace's and the trace-acceptance pool's), or ``None`` without one."""
    features = stop_features(scenario, trace, acceptance)
    if features is None or scenario.stop_predictor is None:
        return None
    return StopModel(scenario.stop_predictor, policies.stop, features)
