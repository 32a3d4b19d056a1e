"""simulate() takes policy instances and sinks; run_scenario; executors; no global state."""

from __future__ import annotations

import ast
import gc
from pathlib import Path

import edgespec
from edgespec.core.types import BatchRecord, RequestRecord, RoundRecord
from edgespec.core.unfinished import UnfinishedCount
from edgespec.policies.batching import FcfsBatching
from edgespec.policies.interfaces import WindowDecision, WindowObservation
from edgespec.policies.routing import JoinShortestQueueRouting
from edgespec.sim.commands.run import run_scenario_dict
from edgespec.sim.setup.build import Policies
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import run_scenario, simulate
from edgespec.sweeps.executor import ProcessPoolSweepExecutor, SerialExecutor
from edgespec.sweeps.grid import run_sweep
from tests.sim.helpers import tiny_scenario


class CountingWindow:
    """Not in any registry: only reachable by injection."""

    def __init__(self, gamma: int) -> None:
        self.gamma = gamma
        self.calls = 0

    def next_window(self, obs: WindowObservation) -> WindowDecision:
        self.calls += 1
        return WindowDecision(self.gamma)


class Collect:
    def __init__(self) -> None:
        self.requests: list[RequestRecord] = []
        self.batches: list[BatchRecord] = []
        self.rounds: list[RoundRecord] = []
        self.unfinished_counts: list[UnfinishedCount] = []

    def request(self, record: RequestRecord) -> None:
        self.requests.append(record)

    def batch(self, record: BatchRecord) -> None:
        self.batches.append(record)

    def round(self, record: RoundRecord) -> None:
        self.rounds.append(record)

    def committed(self, num_tokens: int) -> None:
        assert num_tokens == 0, "a run with round records emitted every round's"

    def unfinished(self, count: UnfinishedCount) -> None:
        self.unfinished_counts.append(count)


def test_injected_policy_instances_and_sink() -> None:
    data = tiny_scenario()
    scenario = scenario_from_dict(data, ["duration_s=5", "fast_path=false", "record_rounds=true"])
    window = CountingWindow(3)
    policies = Policies(JoinShortestQueueRouting(), FcfsBatching(), window)
    sink = Collect()
    result = simulate(scenario, policies=policies, sink=sink)
    # one call per round (those still in flight at the end are not recorded)
    assert len(sink.rounds) > 0 and 0 <= window.calls - len(sink.rounds) <= 12
    assert {r.num_drafted for r in sink.rounds} <= {0, 1, 2, 3}
    assert (
        result.requests == () and result.metrics is None and result.num_rounds == len(sink.rounds)
    )
    listed = simulate(
        scenario, policies=Policies(JoinShortestQueueRouting(), FcfsBatching(), CountingWindow(3))
    )
    assert listed.requests == tuple(sink.requests) and listed.rounds == tuple(sink.rounds)
    assert sink.unfinished_counts == [listed.unfinished]  # once, at the end


def test_run_scenario_and_the_collector_is_left_alone() -> None:
    scenario = scenario_from_dict(tiny_scenario(), ["duration_s=5"])
    assert gc.isenabled()
    metrics = run_scenario(scenario)
    assert gc.isenabled()
    assert metrics == simulate(scenario, keep_records=False).metrics
    gc.disable()
    try:
        run_scenario(scenario)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_process_pool_sweep_equals_serial() -> None:
    base = tiny_scenario()
    base["duration_s"] = 5.0
    base["policies"]["window"] = {"name": "static", "params": {"gamma": 4}}
    grid = {"policies.window.params.gamma": [2, 5], "auto_topology.devices.0.count": [4, 8]}
    serial = run_sweep(base, grid, run_scenario_dict, progress=False, executor=SerialExecutor())
    pooled = run_sweep(
        base, grid, run_scenario_dict, progress=False, executor=ProcessPoolSweepExecutor(2)
    )
    assert [p.overrides for p in pooled] == [p.overrides for p in serial]
    assert [p.metrics for p in pooled] == [p.metrics for p in serial]


def test_the_simulator_never_imports_experiments() -> None:
    sim_dir = Path(edgespec.__file__).parent / "sim"
    for path in sim_dir.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith("edgespec.experiments"), path.name
