"""Hand-built pipeline set-ups for the edge drafting server's simulation tests."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from edgespec.policies.drafting_server.bandwidth import (
    optimal_shares,
    upload_bits_per_token,
    upload_time_s,
)
from edgespec.policies.drafting_server.costs import PipelineCosts
from edgespec.policies.drafting_server.latency import Batches, PipelineTask
from edgespec.policies.drafting_server.planner import (
    PipelineObservation,
    PipelinePlan,
    observe_tasks,
)
from tests.policies.drafting_server.helpers import paper_costs as paper_costs  # one copy

BANDWIDTH_HZ = 20e6


def observation(
    inputs: Sequence[int], outputs: Sequence[int], efficiencies: Sequence[float] | None = None
) -> PipelineObservation:
    effs = list(efficiencies) if efficiencies is not None else [4.0 + k for k in range(len(inputs))]
    return observe_tasks(list(inputs), list(outputs), effs, BANDWIDTH_HZ)


def plan_of(
    costs: PipelineCosts,
    obs: PipelineObservation,
    batches: Batches,
    spec_len: int,
    *,
    uniform: bool = False,
) -> PipelinePlan:
    """A plan with these batches and l, Eq. 27's shares (or uniform) and Eq. 16's T_com."""
    per_token = upload_bits_per_token(costs.draft.hidden, costs.verify.hidden)
    bits = [per_token * t.input_len for t in obs.tasks]
    effs = [t.spectral_efficiency for t in obs.tasks]
    k = len(obs.tasks)
    shares = tuple(1.0 / k for _ in range(k)) if uniform else optimal_shares(bits, effs)
    upload = upload_time_s(bits, effs, shares, obs.bandwidth_hz)
    return PipelinePlan(batches, spec_len, shares, 0.0, upload)


def drawn_tasks(num_tasks: int, seed: int = 7) -> tuple[PipelineTask, ...]:
    """I_k ~ U[1, 512], O_k ~ U[1, 2048], efficiencies in [0.5, 10] bit/s/Hz."""
    rng = np.random.default_rng(seed)
    inputs = rng.integers(1, 513, num_tasks)
    outputs = rng.integers(1, 2049, num_tasks)
    effs = rng.uniform(0.5, 10.0, num_tasks)
    return tuple(
        PipelineTask(int(i), int(o), float(e))
        for i, o, e in zip(inputs, outputs, effs, strict=True)
    )
