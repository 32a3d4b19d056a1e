"""The drafting server's cost inputs (Zhu et al.) from the bundled presets: the draft and verify
models' Table I dimensions and their stages' Eq. 17 coefficients (Table II), read from
``kind: zhu`` profiles (:mod:`edgespec.hardware.cost_models`)."""

from __future__ import annotations

from edgespec.config import ConfigError
from edgespec.hardware.cost_models import ModelArchitecture, ZhuCost, load_profile
from edgespec.policies.drafting_server.costs import ModelDims, PipelineCosts, StageCoefficients

GB = 1e9
"""The paper's Γ_s = 16 GB is read as 16·10⁹ bytes."""


def model_dims(model: ModelArchitecture) -> ModelDims:
    """Table I's three numbers of a model preset."""
    return ModelDims(model.name, model.num_layers, model.hidden_size, model.ffn_size)


def zhu_stage(profile: str) -> tuple[ModelDims, StageCoefficients]:
    """The model and Eq. 17 coefficients of a ``kind: zhu`` profile (name or path)."""
    cost = load_profile(profile)
    if not isinstance(cost, ZhuCost):
        raise ConfigError("profile", f"{profile!r} is not a 'zhu' profile")
    if cost.flops != "printed":
        raise ConfigError(
            "profile",
            f"{profile!r} is fitted against the architecture's FLOPs; the pipeline model "
            "needs a profile over Zhu's printed FLOPs (flops: printed)",
        )
    return model_dims(cost.model), StageCoefficients(cost.c1_s_per_flop, cost.c2_s)


def pipeline_costs(
    draft_profile: str, verify_profile: str, sbs_memory_gb: float, acceptance: float
) -> PipelineCosts:
    """:class:`PipelineCosts` from two zhu profiles, Γ_s in GB and the acceptance α."""
    draft, draft_stage = zhu_stage(draft_profile)
    verify, verify_stage = zhu_stage(verify_profile)
    return PipelineCosts(draft, verify, draft_stage, verify_stage, sbs_memory_gb * GB, acceptance)
