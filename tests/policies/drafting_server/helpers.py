"""Small hand-checkable pipeline cost set-ups for the planner's tests."""

from __future__ import annotations

from edgespec.policies.drafting_server.costs import ModelDims, PipelineCosts, StageCoefficients

UNIT = ModelDims("unit", 1, 1, 1)  # 12 bytes of weights (Eq. 9), 4 KV bytes per token


def fixed_costs(
    draft_s: float, verify_s: float, acceptance: float = 0.0, memory_bytes: float = 1e9
) -> PipelineCosts:
    """Stage times that do not depend on the batch (c1 = 0): a draft iteration costs
    ``draft_s``, a verification ``verify_s``; α = 0 makes L = 1 token per step."""
    return PipelineCosts(
        UNIT,
        UNIT,
        StageCoefficients(0.0, draft_s),
        StageCoefficients(0.0, verify_s),
        memory_bytes,
        acceptance,
    )


def paper_costs(acceptance: float = 0.8) -> PipelineCosts:
    """(TinyLlama-1.1B, LLaMA-7B) with Table II's coefficients and Γ_s = 16 GB."""
    return PipelineCosts(
        ModelDims("tinyllama-1.1b", 22, 2048, 5632),
        ModelDims("llama2-7b", 32, 4096, 11008),
        StageCoefficients(4.11e-13, 0.56e-3),
        StageCoefficients(2.08e-14, 1.28e-2),
        16e9,
        acceptance,
    )
