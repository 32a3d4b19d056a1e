"""An invalid window decision (γ < 1, a γ that is not an integer, a ``fused`` that is not a
bool) is refused with the same error by both hosts, on every simulator handler set, whether
it comes on a session's first round, a later one, or at a fused round's verdict: both hosts
ask through :func:`edgespec.policies.contracts.decide_window`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import pytest

from edgespec.policies import registry
from edgespec.policies.contracts import PolicyContractError
from edgespec.policies.inputs import WindowHistory
from edgespec.policies.interfaces import WindowDecision, WindowObservation
from edgespec.runtime.edge.rounds import decide
from edgespec.sim.handler_sets import HANDLER_SETS
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import simulate
from tests.sim.helpers import tiny_scenario

BAD = {
    "gamma 0": WindowDecision(0),
    "gamma -2": WindowDecision(-2),
    "gamma 2.5": WindowDecision(2.5),  # type: ignore[arg-type]
    "fused 'yes'": WindowDecision(3, "yes"),  # type: ignore[arg-type]
}


def _message(decision: WindowDecision) -> str:
    return (
        f"window policy _Bad returned {decision!r}; "
        "expected WindowDecision(gamma=<integer >= 1>, fused=<bool>)"
    )


@dataclass
class _Bad:
    """γ = 3 until call ``bad_from``, then ``decision`` (test-only)."""

    decision: WindowDecision
    bad_from: int
    calls: int = 0
    seen: list[WindowObservation] = field(default_factory=list)
    may_fuse: ClassVar[bool] = False

    def next_window(self, obs: WindowObservation) -> WindowDecision:
        self.calls += 1
        return self.decision if self.calls >= self.bad_from else WindowDecision(3)


@pytest.mark.parametrize("when", ["first round", "later round"])
@pytest.mark.parametrize("bad", sorted(BAD))
@pytest.mark.parametrize("handlers", sorted(HANDLER_SETS))
def test_the_simulator_refuses_it_on_every_handler_set(
    handlers: str, bad: str, when: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = _Bad(BAD[bad], 1 if when == "first round" else 40)
    monkeypatch.setitem(registry.WINDOW, "bad", lambda: policy)
    scenario = scenario_from_dict(tiny_scenario(), ["policies.window.name=bad"])
    with pytest.raises(PolicyContractError) as info:
        simulate(scenario, handlers=handlers)
    assert str(info.value) == _message(BAD[bad])
    assert policy.calls == policy.bad_from  # refused at once, nothing ran on the answer


@pytest.mark.parametrize("handlers", ["reference", "every_hop", "inlined"])
def test_the_simulator_refuses_it_at_a_fused_verdict(
    handlers: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In ``mode: fused`` the server asks the policy at each fused round's verdict."""
    policy = _Bad(WindowDecision(0), 30)
    monkeypatch.setitem(registry.WINDOW, "bad", lambda: policy)
    scenario = scenario_from_dict(tiny_scenario(), ["policies.window.name=bad", "mode=fused"])
    with pytest.raises(PolicyContractError, match=r"^window policy _Bad returned WindowDecis"):
        simulate(scenario, handlers=handlers)
    assert policy.calls == 30


@pytest.mark.parametrize("bad", sorted(BAD))
def test_the_runtime_refuses_it_with_the_same_error(bad: str) -> None:
    policy: Any = _Bad(BAD[bad], 1)
    with pytest.raises(PolicyContractError) as info:
        decide(policy, WindowHistory("pair"), 0.0)
    assert str(info.value) == _message(BAD[bad])
