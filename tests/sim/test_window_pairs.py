"""The window history's draft–target pair in the simulator: AWC's stabiliser keeps one
state per device and server (DSD), not one for the whole fleet."""

from __future__ import annotations

from dataclasses import replace

from edgespec.policies.awc import AwcState, AwcWindow
from edgespec.policies.interfaces import WindowDecision, WindowObservation
from edgespec.sim.setup.build import build_policies
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import simulate
from tests.parity.window_recording import acceptance_only_wc_dnn
from tests.sim.helpers import tiny_scenario


class PairRecorder:
    """A static window that records which pair each observation names."""

    def __init__(self) -> None:
        self.pairs: list[str] = []

    def next_window(self, obs: WindowObservation) -> WindowDecision:
        self.pairs.append(obs.pair)
        return WindowDecision(3)


def test_every_observation_names_its_device_and_server() -> None:
    scenario = scenario_from_dict(tiny_scenario())
    recorder = PairRecorder()
    result = simulate(scenario, policies=replace(build_policies(scenario), window=recorder))
    assert result.requests and len(recorder.pairs) >= result.num_rounds
    expected = {f"{d}>{s}" for d in range(12) for s in range(2)}
    seen = set(recorder.pairs)
    assert seen <= expected and len(seen) > 12  # devices meet both servers
    served = {f"{r.client_id}>{r.server_id}" for r in result.requests}
    assert served <= seen


def test_awc_keeps_one_stabiliser_state_per_pair() -> None:
    scenario = scenario_from_dict(tiny_scenario())
    awc = AwcWindow(acceptance_only_wc_dnn(), fused_gamma=3)
    simulate(scenario, policies=replace(build_policies(scenario), window=awc))
    pairs = [f"{d}>{s}" for d in range(12) for s in range(2)]
    states = {pair: awc.state(pair) for pair in pairs if awc.state(pair) != AwcState()}
    assert len(states) > 12
    assert awc.state("") == AwcState()  # nothing under one fleet-wide key
