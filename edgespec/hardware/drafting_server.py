"""The drafting server's cost inputs (Zhu et al.) from the bundled presets: the draft and verify
models' Table I dimensions and their stages' Eq. 17 coefficients (Table II), read from
``kind: zhu`` profiles (:mod:`edgespec.hardware.cost_models`) over Zhu's printed FLOPs, each
of its stage's role (the bundled paper profiles say none)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from edgespec.config import ConfigError
from edgespec.hardware.cost_models import ModelArchitecture, ZhuCost, load_profile
from edgespec.hardware.profile_info import profile_info
from edgespec.policies.drafting_server.costs import ModelDims, PipelineCosts, StageCoefficients

GB = 1e9
"""The paper's Γ_s = 16 GB is read as 16·10⁹ bytes."""

StageRole = Literal["draft", "target"]

_STAGES = {
    "draft": ("draft", "the drafter's", "NAME-draft-zhu-printed.yaml"),
    "target": ("verify", "the target's", "NAME-zhu-printed.yaml"),
}
"""Per role: its pipeline stage, whose profile it is, the file ``edgespec profile`` writes."""


def model_dims(model: ModelArchitecture) -> ModelDims:
    """Table I's three numbers of a model preset."""
    return ModelDims(model.name, model.num_layers, model.hidden_size, model.ffn_size)


def printed_sibling(profile: str) -> str:
    """The printed-FLOPs fit ``edgespec profile`` writes beside the zhu profile ``profile``
    (``DIR/NAME-zhu.yaml`` → ``DIR/NAME-zhu-printed.yaml``)."""
    path = Path(profile)
    return str(path.with_name(f"{path.stem}-printed{path.suffix}"))


def check_stage_role(profile: str, role: StageRole) -> None:
    """Refuse the profile ``profile`` when it says it is the other role's:
    ``'p-zhu-printed.yaml' is the target's profile (role: target); the pipeline's draft
    stage needs the drafter's (role: draft, NAME-draft-zhu-printed.yaml)``."""
    found = profile_info(profile).role
    if found is None or found == role:
        return
    stage, whose, name = _STAGES[role]
    raise ConfigError(
        "profile",
        f"{profile!r} is {_STAGES[found][1]} profile (role: {found}); the pipeline's {stage} "
        f"stage needs {whose} (role: {role}, {name})",
    )


def zhu_stage(profile: str, role: StageRole | None = None) -> tuple[ModelDims, StageCoefficients]:
    """The model and Eq. 17 coefficients of a ``kind: zhu`` profile (name or path) over
    Zhu's printed FLOPs, of the ``role`` given (``None``: not checked)."""
    cost = load_profile(profile)
    if not isinstance(cost, ZhuCost):
        raise ConfigError("profile", f"{profile!r} is not a 'zhu' profile")
    if role is not None:
        check_stage_role(profile, role)
    if cost.flops != "printed":
        raise ConfigError(
            "profile",
            f"{profile!r} is fitted against the architecture's FLOPs (flops: architecture); "
            "the pipeline model prices Zhu's printed FLOPs: give "
            f"{printed_sibling(profile)!r}, the printed fit edgespec profile writes beside it",
        )
    return model_dims(cost.model), StageCoefficients(cost.c1_s_per_flop, cost.c2_s)


def pipeline_costs(
    draft_profile: str, verify_profile: str, sbs_memory_gb: float, acceptance: float
) -> PipelineCosts:
    """:class:`PipelineCosts` from two zhu profiles, Γ_s in GB and the acceptance α."""
    draft, draft_stage = zhu_stage(draft_profile, "draft")
    verify, verify_stage = zhu_stage(verify_profile, "target")
    return PipelineCosts(draft, verify, draft_stage, verify_stage, sbs_memory_gb * GB, acceptance)
