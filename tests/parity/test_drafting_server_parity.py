"""Parity: one ``pipeline:`` scenario plans the same run in both hosts, and both run the
plan the same way. The simulator's side is its own path (the scenario loader, the costs,
planner and plan of :mod:`edgespec.hardware.drafting_plan`, the engine with the scenario's
options), fed the runtime's tasks instead of drawn ones; the runtime's side is
``edgespec drafting-server --plan``'s planning path (the scenario file read as the command
reads it, the sessions planned through the shared input builder) and the batched drafting
server on tiny models over loopback gRPC. The plans are equal, and each batch drafts and
verifies for the same number of steps in both.

The drafting server drafts greedily on the target's own prefix, so whether the draft's
token at output position j is accepted depends only on j: one acceptance sequence per
session (computed here with one forward pass of the draft over the target's output)
describes the session whatever γ each round uses. The simulator replays those sequences
as its trace acceptance.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

torch = pytest.importorskip("torch")

from edgespec.hardware.drafting_plan import build_costs, build_plan, build_planner  # noqa: E402
from edgespec.policies.drafting_server.planner import observe_tasks  # noqa: E402
from edgespec.runtime.backends.transformers_backend import TransformersTarget  # noqa: E402
from edgespec.runtime.commands.drafting_server_plan import (  # noqa: E402
    load_plan_flag,
    plan_run,
    run_pipelined,
)
from edgespec.runtime.edge.batched_draft import BatchedDraftModel  # noqa: E402
from edgespec.runtime.edge.drafting_server import run_drafting_server  # noqa: E402
from edgespec.runtime.testing import noisy_copy, tiny_llama  # noqa: E402
from edgespec.runtime.wire.grpc_client import RemoteVerifier  # noqa: E402
from edgespec.runtime.wire.inprocess import target_greedy_decode  # noqa: E402
from edgespec.sim.drafting_server.build import sim_options  # noqa: E402
from edgespec.sim.drafting_server.engine import simulate_pipeline  # noqa: E402
from edgespec.sim.drafting_server.outcomes import TracePool, trace_outcomes  # noqa: E402
from edgespec.sim.drafting_server.scenario import pipeline_scenario_from_dict  # noqa: E402
from edgespec.sim.model.acceptance import TraceAcceptance  # noqa: E402
from tests.runtime.conftest import start_server  # noqa: E402

PROMPTS = ((3, 4, 5), (9,) * 7, (2, 8), (11, 12, 13, 14, 15), (6, 7), (20, 21, 22, 23))
BUDGETS = (12, 5, 9, 3, 14, 7)

CASES: dict[str, tuple[dict[str, Any], tuple[int, int]]] = {
    # planner section → (number of batches, spec_len) it plans for these sessions
    "dp: one batch, l = 2": ({}, (1, 2)),
    "heuristic: two batches of three, l = 3": ({"batching": "heuristic"}, (2, 3)),
    "no batching, not pipelined: six batches, l = 3": (
        {"batching": "none", "pipelined": False},
        (6, 3),
    ),
}


def scenario(planner: dict[str, Any]) -> dict[str, Any]:
    """The one scenario both hosts read: the simulator's form, with its own sections."""
    return {
        "name": "parity",
        "system": "drafting_server",
        "pipeline": {
            "alpha": 0.8,
            "max_output_tokens": max(BUDGETS),
            "planner": {"max_spec_len": 4, **planner},
            "simulation": {"acceptance": "trace"},
        },
    }


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
def test_both_hosts_plan_alike_and_run_the_plan_alike(case: str, tmp_path: Path) -> None:
    planner, (num_batches, spec_len) = CASES[case]
    data = scenario(planner)
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(data))
    target_model = tiny_llama(seed=0)
    target = TransformersTarget(target_model)
    draft_model = noisy_copy(target_model, noise=0.2, seed=1)
    server = start_server(target)
    verifier = RemoteVerifier(f"127.0.0.1:{server.port}")
    try:  # the runtime host: the command's planning path, then the plan run
        planning = load_plan_flag(str(path))
        assert planning is not None
        plan = plan_run(planning, PROMPTS, BUDGETS, verifier.max_draft_tokens())
        pipelined = run_pipelined(argparse.Namespace(pipeline=None), planning)
        run = run_drafting_server(
            verifier, BatchedDraftModel(draft_model), PROMPTS, plan=plan,
            max_new_tokens=BUDGETS, pipelined=pipelined,
        )  # fmt: skip
    finally:
        verifier.close_channel()
        server.stop(grace_s=0)
    assert (len(plan.batches), plan.spec_len) == (num_batches, spec_len)
    assert pipelined is data["pipeline"]["planner"].get("pipelined", True)
    outputs = [target_greedy_decode(target, p, b) for p, b in zip(PROMPTS, BUDGETS, strict=True)]
    assert list(run.output_token_ids) == outputs  # lossless
    assert run.gamma == plan.spec_len

    # The simulator's host: its loader, costs, planner and options, the runtime's tasks.
    sim = pipeline_scenario_from_dict(data)
    costs = build_costs(sim.pipeline)
    cell = sim.pipeline.cell  # no radio on loopback: 1 bit/s/Hz each, the cell's band
    obs = observe_tasks(
        [len(p) for p in PROMPTS], list(BUDGETS), [1.0] * len(PROMPTS), cell.bandwidth_hz
    )
    sim_plan = build_plan(build_planner(sim.pipeline, costs), obs)
    assert sim_plan == plan
    seqs = tuple(
        acceptance_sequence(draft_model, p, o) for p, o in zip(PROMPTS, outputs, strict=True)
    )
    pool = TracePool(TraceAcceptance(seqs), ())
    result = simulate_pipeline(
        costs,
        obs,
        sim_plan,
        options=sim_options(sim),
        outcomes=trace_outcomes(obs.tasks, sim_plan.spec_len, pool, 0),
    )
    # The same decisions: every batch takes part in the same number of steps.
    assert run.schedule[0] == tuple(range(len(plan.batches)))  # the plan's batches, in order
    runtime_steps = Counter(m for step in run.schedule for m in step)
    assert tuple(runtime_steps[m] for m in range(len(plan.batches))) == result.batch_steps
    assert run.num_steps == max(result.batch_steps)
