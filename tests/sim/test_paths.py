"""choose_path: which event-loop path a run takes, decided once from the scenario."""

from __future__ import annotations

from typing import Any

import pytest

from edgespec.sim.build import build_entities, build_policies
from edgespec.sim.paths import EventPath, choose_path
from edgespec.sim.scenario import scenario_from_dict
from tests.sim.helpers import tiny_scenario

_STATIC = {"name": "static", "params": {"gamma": 4}}


def _path(
    overrides: list[str], window: dict[str, Any] = _STATIC, flags: dict[str, bool] | None = None
) -> EventPath:
    data = tiny_scenario(
        policies={"routing": {"name": "jsq"}, "batching": {"name": "fcfs"}, "window": window}
    )
    scenario = scenario_from_dict(data, overrides)
    devices, servers = build_entities(scenario)
    settings = {"record_rounds": False, "stop_cuts_blocks": False, "replays_trees": False}
    settings |= {"every_hop": False} | (flags or {})
    policies = build_policies(scenario)
    return choose_path(scenario, devices, servers, policies, **settings)


def test_the_fast_path_inlines_the_static_window_fcfs_and_jsq() -> None:
    path = _path([])
    assert (path.fast, path.static_gamma, path.fcfs_inline, path.jsq_inline) == (
        True,
        4,
        True,
        True,
    )
    assert path.lazy and not path.hops and not path.observes and path.fuses is False
    assert not path.may_fuse
    assert path.description == "fast (inlined: static window, fcfs batching, jsq routing)"


def test_fast_path_false_inlines_nothing_but_keeps_the_lazy_batch_end() -> None:
    path = _path(["fast_path=false"])
    assert not (path.fast or path.fcfs_inline or path.jsq_inline) and path.static_gamma is None
    assert path.lazy  # both paths use batchend.py's BATCH_END
    assert path.description == "straightforward (fast_path=false)"


@pytest.mark.parametrize(
    ("flag", "reason"),
    [
        ("record_rounds", None),
        ("replays_trees", None),
        (
            "stop_cuts_blocks",
            "straightforward (fast path refused: a stop predictor cuts blocks short)",
        ),
    ],
)
def test_what_turns_the_lazy_batch_end_off(flag: str, reason: str | None) -> None:
    path = _path([], flags={flag: True})
    assert not path.lazy
    if reason is not None:
        assert not path.fast and path.description == reason


def test_every_hop_applies_to_the_straightforward_path_only() -> None:
    assert not _path([], flags={"every_hop": True}).hops
    slow = _path(["fast_path=false"], flags={"every_hop": True})
    assert slow.hops and not slow.lazy


def test_a_window_that_may_go_fused_runs_the_generic_batch_end() -> None:
    path = _path([], window={"name": "awc"})
    assert path.fuses is True and not path.lazy and path.may_fuse and path.observes
    assert path.description.endswith("; the window policy may go fused: generic BATCH_END")
