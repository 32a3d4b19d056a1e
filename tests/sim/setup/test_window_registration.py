"""A window policy registered as SIMULATOR.md's "Adding a policy" says, its class saying
nothing of fusing and its WINDOW_FUSES entry saying it never fuses, runs (distributed
only): the run was refused as one that "may run fused rounds", the entry ignored."""

from __future__ import annotations

from dataclasses import dataclass

from edgespec.policies.interfaces import WindowDecision, WindowObservation
from edgespec.policies.registry import WINDOW, WINDOW_FUSES
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import simulate
from tests.sim.helpers import tiny_scenario


@dataclass(frozen=True, slots=True)
class QuietWindow:
    """γ = 3, every round; no ``may_fuse``."""

    gamma: int = 3

    def next_window(self, obs: WindowObservation) -> WindowDecision:
        return WindowDecision(self.gamma)


def test_a_window_its_registry_entry_says_never_fuses_runs() -> None:
    WINDOW["quiet-probe"], WINDOW_FUSES["quiet-probe"] = QuietWindow, lambda params: False
    try:
        data = tiny_scenario(duration_s=3.0)
        data["policies"] = {"window": {"name": "quiet-probe"}}
        run = simulate(scenario_from_dict(data), keep_records=False)
    finally:
        del WINDOW["quiet-probe"], WINDOW_FUSES["quiet-probe"]
    assert run.metrics is not None and run.metrics.num_rounds > 0
