"""choose_handler_set: which handler set a run takes, decided once, and why."""

from __future__ import annotations

from typing import Any

import pytest

from edgespec.errors import UserInputError
from edgespec.sim.handler_sets import Choice, choose_handler_set
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import StreamSink, build_state
from tests.sim.helpers import tiny_scenario

_STATIC = {"name": "static", "params": {"gamma": 4}}


def _choice(
    overrides: list[str], window: dict[str, Any] = _STATIC, requested: str | None = None
) -> Choice:
    data = tiny_scenario(
        policies={"routing": {"name": "jsq"}, "batching": {"name": "fcfs"}, "window": window}
    )
    state = build_state(scenario_from_dict(data, overrides), StreamSink())
    return choose_handler_set(state, requested)


def test_the_fast_set_inlines_the_static_window_fcfs_and_jsq() -> None:
    assert _choice([]) == Choice(
        "fast", "fast (inlined: static window, fcfs batching, jsq routing)"
    )


def test_fast_path_false_always_runs_the_reference() -> None:
    for overrides in ([], ["record_rounds=true"], ["mode=fused"], ["mode=centralized"]):
        assert _choice([*overrides, "fast_path=false"]) == Choice(
            "reference", "reference (fast_path=false)"
        )


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        (["record_rounds=true"], "round records"),
        (["mode=centralized"], "centralized blocks"),
        (
            ["verification={rule: semantic, reject_share: 0.4, upload: fh}"],
            "semantic verification blocks",
        ),
        (["mode=fused"], "mode fused; the window policy may go fused"),
    ],
)
def test_what_turns_the_inbound_sets_off(overrides: list[str], reason: str) -> None:
    choice = _choice(overrides)
    assert choice.name == "inlined"
    assert choice.description.endswith(f"; inbound refused: {reason})")


def test_a_window_that_may_go_fused_runs_the_inlined_set() -> None:
    choice = _choice([], window={"name": "awc"})
    assert choice == Choice(
        "inlined",
        "inlined (inlined: fcfs batching, jsq routing; inbound refused: the window policy "
        "may go fused)",
    )


def test_a_set_asked_for_by_name_runs_or_is_refused_with_the_reason() -> None:
    assert _choice(["fast_path=false"], requested="fast") == Choice("fast", "fast (asked for)")
    assert _choice([], requested="every_hop").name == "every_hop"
    with pytest.raises(UserInputError, match=r"^handler set 'inbound' cannot run this "
                       r"scenario: centralized blocks$"):  # fmt: skip
        _choice(["mode=centralized"], requested="inbound")
    with pytest.raises(UserInputError, match=r"^unknown handler set 'quick'; known: \["):
        _choice([], requested="quick")
