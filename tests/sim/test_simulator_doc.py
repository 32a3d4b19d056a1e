"""The defaults and constants docs/SIMULATOR.md states, pinned: a change here needs the
doc's *Scenario fields* table (and its other numbers) changed with it."""

from __future__ import annotations

import typing

from edgespec.config import PolicySpec
from edgespec.metrics.attribution import DEFAULT_THRESHOLD, DEFAULT_WINDOW
from edgespec.metrics.record_files import ROW_GROUP_ROWS
from edgespec.policies.wisp import DEFAULT_GUARD_S
from edgespec.sim.commands.flags import DEFAULTS
from edgespec.sim.model.network import HEADER_BYTES, PARENT_BYTES, PROB_BYTES, TOKEN_ID_BYTES
from edgespec.sim.model.stop_model import StopPredictorConfig
from edgespec.sim.setup.scenario import (
    CostModelConfig,
    DevicePool,
    LinkConfig,
    Scenario,
    ServerPool,
)


def test_scenario_field_defaults_are_the_documented_ones() -> None:
    s = Scenario()
    assert (s.name, s.seed, s.duration_s, s.mode, s.temperature) == (
        "scenario",
        0,
        60.0,
        "distributed",
        0.0,
    )
    assert dict(s.slo_classes) == {"default": None}
    assert s.deadline_rule == "pace"
    assert dict(s.links) == {"default": LinkConfig(10.0, 0.0, 100.0, 0.0, 200.0)}
    assert s.auto_topology.devices == (DevicePool(),)
    assert s.auto_topology.servers == (ServerPool(),)
    assert ServerPool().prefix_cache is True
    assert DevicePool().server_pools == ()
    assert CostModelConfig() == CostModelConfig("roofline", None)
    assert (s.policies.routing, s.policies.batching, s.policies.window) == (
        PolicySpec("round_robin"),
        PolicySpec("fcfs"),
        PolicySpec("static"),
    )
    assert s.acceptance.kind == "decay" and s.acceptance.traces is None
    assert (s.workload.kind, s.workload.dataset) == ("closed_loop", "sharegpt")
    assert s.workload.prompt_tokens is None and s.workload.output_tokens is None
    assert s.workload.max_output_tokens is None
    assert s.stop_predictor is None and StopPredictorConfig().overhead_ms == 0.0
    assert (s.record_rounds, s.fast_path) == (False, True)


def test_documented_constants() -> None:
    assert DEFAULT_GUARD_S == 0.005  # wisp batching's guard_s (δ), 5 ms
    assert (DEFAULT_WINDOW, DEFAULT_THRESHOLD) == (20, 1.5)  # Eq. 21 attribution
    assert {k: DEFAULTS[k] for k in ("lo", "hi", "epsilon")} == {
        "lo": 1,
        "hi": 1000,
        "epsilon": 0.05,
    }
    assert ROW_GROUP_ROWS == 16_384
    assert (HEADER_BYTES, TOKEN_ID_BYTES, PARENT_BYTES, PROB_BYTES) == (64, 4, 4, 2)


def test_the_four_cost_model_kinds() -> None:
    kind = typing.get_type_hints(CostModelConfig)["kind"]
    assert typing.get_args(kind) == ("roofline", "wisp", "zhu", "lookup")
