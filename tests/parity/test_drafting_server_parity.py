"""Parity: Zhu's pipeline planner, fed by the shared input builder, makes the same plan in
the real runtime (the batched drafting server, tiny models, loopback gRPC) and in the
simulator (the edge drafting server's events), and the two hosts run it the same way:
each batch drafts and verifies for the same number of steps.

The drafting server drafts greedily on the target's own prefix, so whether the draft's
token at output position j is accepted depends only on j: one acceptance sequence per
session (computed here with one forward pass of the draft over the target's output)
describes the session whatever γ each round uses. The simulator replays those sequences
as its trace acceptance.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from edgespec.policies.drafting_server.costs import ModelDims, PipelineCosts, StageCoefficients  # noqa: E402
from edgespec.policies.drafting_server.planner import PipelinePlanner, observe_tasks  # noqa: E402
from edgespec.runtime.backends.transformers_backend import TransformersTarget  # noqa: E402
from edgespec.runtime.edge.batched_draft import BatchedDraftModel  # noqa: E402
from edgespec.runtime.edge.drafting_server import plan_sessions, run_drafting_server  # noqa: E402
from edgespec.runtime.testing import noisy_copy, tiny_llama  # noqa: E402
from edgespec.runtime.wire.grpc_client import RemoteVerifier  # noqa: E402
from edgespec.runtime.wire.inprocess import target_greedy_decode  # noqa: E402
from edgespec.sim.drafting_server.engine import simulate_pipeline  # noqa: E402
from edgespec.sim.drafting_server.outcomes import TracePool, trace_outcomes  # noqa: E402
from edgespec.sim.model.acceptance import TraceAcceptance  # noqa: E402
from tests.runtime.conftest import start_server  # noqa: E402

PROMPTS = ((3, 4, 5), (9,) * 7, (2, 8), (11, 12, 13, 14, 15), (6, 7), (20, 21, 22, 23))
BUDGETS = (12, 5, 9, 3, 14, 7)
DIMS = ModelDims("tiny", 2, 32, 64)


CASES = {
    "one batch, l = 4": (1e-9, 0.9),  # cheap drafting: long blocks, one batch
    "five batches, l = 1": (1e-6, 0.9),  # costly drafting: short blocks, batches overlap
    "three batches of two": (3e-7, 0.8),
}


def costs(draft_c1: float, acceptance: float) -> PipelineCosts:
    return PipelineCosts(
        DIMS, DIMS, StageCoefficients(draft_c1, 1e-3), StageCoefficients(1e-10, 2e-2), 1e6,
        acceptance,
    )  # fmt: skip


def acceptance_sequence(
    draft_model: Any, prompt: tuple[int, ...], output: tuple[int, ...]
) -> tuple[int, ...]:
    """Entry j: the draft's greedy token after the prompt and output[:j] is output[j]."""
    ids = torch.tensor([[*prompt, *output]])
    with torch.no_grad():
        logits = draft_model(ids).logits[0]
    guesses = logits[len(prompt) - 1 : len(prompt) - 1 + len(output)].argmax(-1).tolist()
    return tuple(int(g == t) for g, t in zip(guesses, output, strict=True))


@pytest.mark.parametrize("case", sorted(CASES))
def test_both_hosts_plan_alike_and_run_the_plan_alike(case: str) -> None:
    draft_c1, acceptance = CASES[case]
    target_model = tiny_llama(seed=0)
    target = TransformersTarget(target_model)
    draft_model = noisy_copy(target_model, noise=0.2, seed=1)
    planner = PipelinePlanner(costs(draft_c1, acceptance), max_spec_len=4)
    server = start_server(target)
    verifier = RemoteVerifier(f"127.0.0.1:{server.port}")
    try:
        plan = plan_sessions(planner, PROMPTS, BUDGETS)  # the runtime host's path
        run = run_drafting_server(
            verifier, BatchedDraftModel(draft_model), PROMPTS, batches=plan.batches,
            gamma=plan.spec_len, max_new_tokens=BUDGETS, pipelined=True,
        )  # fmt: skip
    finally:
        verifier.close_channel()
        server.stop(grace_s=0)
    outputs = [target_greedy_decode(target, p, b) for p, b in zip(PROMPTS, BUDGETS, strict=True)]
    assert list(run.output_token_ids) == outputs  # lossless

    # The simulator's host: the same builder and planner, the tasks' own lengths.
    obs = observe_tasks([len(p) for p in PROMPTS], list(BUDGETS), [1.0] * len(PROMPTS), 20e6)
    sim_plan = PipelinePlanner(costs(draft_c1, acceptance), max_spec_len=4).plan(obs)
    assert sim_plan == plan
    seqs = tuple(
        acceptance_sequence(draft_model, p, o) for p, o in zip(PROMPTS, outputs, strict=True)
    )
    pool = TracePool(TraceAcceptance(seqs), ())
    result = simulate_pipeline(
        costs(draft_c1, acceptance),
        obs,
        sim_plan,
        outcomes=trace_outcomes(obs.tasks, sim_plan.spec_len, pool, 0),
    )
    # The same decisions: every batch takes part in the same number of steps.
    runtime_steps = Counter(m for step in run.schedule for m in step)
    assert tuple(runtime_steps[m] for m in range(len(plan.batches))) == result.batch_steps
    assert run.num_steps == max(result.batch_steps)
