"""The defaults docs/SIMULATOR.md's "Edge drafting server (Zhu et al.)" tables state,
pinned: a change here needs the doc changed with it."""

from __future__ import annotations

from edgespec.core.wireless import WirelessCell
from edgespec.hardware.drafting_plan import PlannerConfig
from edgespec.sim.drafting_server.scenario import (
    PipelineConfig,
    PipelineScenario,
    SimulationConfig,
    VerifierConfig,
)


def test_the_documented_defaults() -> None:
    assert (PipelineScenario().name, PipelineScenario().seed) == ("pipeline", 0)
    cfg = PipelineConfig()
    assert (cfg.draft_profile, cfg.verify_profile) == (
        "rtx3080-tinyllama-1.1b-zhu",
        "rtx4500-llama2-7b-zhu",
    )
    assert (cfg.sbs_memory_gb, cfg.alpha, cfg.num_users) == (16.0, 0.8, 100)
    assert (cfg.max_input_tokens, cfg.max_output_tokens) == (512, 2048)
    assert cfg.cell == WirelessCell(400.0, 10.0, 20e6, -106.0, 0.2, -60.0)
    assert cfg.planner == PlannerConfig("dp", True, "optimal", None, 10, 4, None)
    assert cfg.simulation == SimulationConfig(True, "expected", ("gsm8k",))
    assert cfg.verifier == VerifierConfig(None, 1024, 16777216, 1073741824, None)
    assert cfg.stop_predictor is None
