"""The uplink: when each user's prompt has reached the drafting server (Zhu et al.,
Eq. 15), from the plan's bandwidth shares and the users' channels."""

from __future__ import annotations

from edgespec.policies.drafting_server.bandwidth import upload_bits_per_token
from edgespec.policies.drafting_server.costs import PipelineCosts
from edgespec.policies.drafting_server.planner import PipelineObservation, PipelinePlan


def upload_times_s(
    obs: PipelineObservation, plan: PipelinePlan, costs: PipelineCosts
) -> list[float]:
    """Eq. 15 per user: λ·I_k / (w_k·B·e_k), λ = 16·(h^d_1 + h^v_1)."""
    per_token = upload_bits_per_token(costs.draft.hidden, costs.verify.hidden)
    if len(plan.shares) != len(obs.tasks):
        raise ValueError(f"the plan has {len(plan.shares)} shares for {len(obs.tasks)} users")
    times = []
    for k, (task, share) in enumerate(zip(obs.tasks, plan.shares, strict=True)):
        if not share > 0:
            raise ValueError(f"user {k} has bandwidth share {share}; it needs a share > 0")
        times.append(
            per_token * task.input_len / (share * obs.bandwidth_hz * task.spectral_efficiency)
        )
    return times
